import Testing
@testable import ChatCore

/// PROTOCOL.md §5, one test case per cell.
///
/// "A" is the recipient (the potential blocker), "B" the sender. The expected
/// values below are written out by hand from the PROTOCOL text, not computed:
///
/// | row of the §5 table                         | checked through                          |
/// |---------------------------------------------|------------------------------------------|
/// | B's new messages reach A live               | `deliversLive`                           |
/// | B's message is stored, B gets a normal `ok` | not a policy question: nothing in the    |
/// |                                             | policy takes "is it stored" as an output; |
/// |                                             | the store always stores. See             |
/// |                                             | ChatDirectoryTests "sender is not told". |
/// | A's channel list moves                      | `movesChannelList`                       |
/// | push event to A when offline                | `pushes` (pushFromBlockedUsers off / on) |
/// | A's `message.history` shows it              | `showsInHistory` (read-time relation)    |
/// |                                             | + `hiddenForever` (flag stored at send)  |
///
/// Standard mode only looks at whether A blocked B ("sender blocked recipient"
/// alone behaves as no block). Strict mode: "a block cuts all communication both
/// ways in every channel type, live, in history and push". §3 says a channel's
/// `lastMessage`/`lastActivityAt` are "as this user sees them", so in strict mode
/// the blocked message does not move A's channel list either (it is not in A's
/// history, so showing it as `lastMessage` would leak it).
///
/// Open channels: the table's "channel list moves" cell is "–"; A sees the
/// message in history, so we expect A's list to move as in a 1-to-N group.
/// §1: `hideBlocked=1` hides blocked users' messages "in group channels too";
/// for open channels it acts on live delivery ("as 1-to-N") but the history
/// cell is a plain "yes".
struct DeliveryPolicyTableTests {
    enum Rel: String, Sendable, CaseIterable {
        case none
        /// A (recipient) blocked B (sender).
        case recipientBlockedSender
        /// B (sender) blocked A (recipient); A did not block B.
        case senderBlockedRecipient
        case both

        var relation: DeliveryPolicy.Relation {
            switch self {
            case .none: return .none
            case .recipientBlockedSender: return .init(recipientBlockedSender: true, senderBlockedRecipient: false)
            case .senderBlockedRecipient: return .init(recipientBlockedSender: false, senderBlockedRecipient: true)
            case .both: return .init(recipientBlockedSender: true, senderBlockedRecipient: true)
            }
        }
    }

    struct Cell: Sendable, CustomTestStringConvertible {
        let mode: DeliveryPolicy.Mode
        let kind: DeliveryPolicy.ChannelKind
        let hideBlocked: Bool
        let rel: Rel
        let live: Bool
        /// push when the channel's pushFromBlockedUsers is false
        let pushOff: Bool
        /// push when the channel's pushFromBlockedUsers is true
        let pushOn: Bool
        let history: Bool
        let hiddenForever: Bool
        let moves: Bool

        init(_ mode: DeliveryPolicy.Mode, _ kind: DeliveryPolicy.ChannelKind, hideBlocked: Bool, _ rel: Rel,
             live: Bool, pushOff: Bool, pushOn: Bool, history: Bool, hiddenForever: Bool, moves: Bool) {
            self.mode = mode
            self.kind = kind
            self.hideBlocked = hideBlocked
            self.rel = rel
            self.live = live
            self.pushOff = pushOff
            self.pushOn = pushOn
            self.history = history
            self.hiddenForever = hiddenForever
            self.moves = moves
        }

        var testDescription: String {
            "\(mode) \(kind) hideBlocked=\(hideBlocked) \(rel.rawValue)"
        }
    }

    // swiftlint:disable line_length
    static let table: [Cell] = [
        // MARK: standard, 1-to-1 — "no" live, "no" push, list does not move, hidden from history forever
        // (stored flag); read-time history check passes so what was said before the block stays readable.
        Cell(.standard, .oneToOne, hideBlocked: false, .none,                   live: true,  pushOff: true,  pushOn: true,  history: true,  hiddenForever: false, moves: true),
        Cell(.standard, .oneToOne, hideBlocked: false, .recipientBlockedSender, live: false, pushOff: false, pushOn: false, history: true,  hiddenForever: true,  moves: false),
        Cell(.standard, .oneToOne, hideBlocked: false, .senderBlockedRecipient, live: true,  pushOff: true,  pushOn: true,  history: true,  hiddenForever: false, moves: true),
        Cell(.standard, .oneToOne, hideBlocked: false, .both,                   live: false, pushOff: false, pushOn: false, history: true,  hiddenForever: true,  moves: false),
        Cell(.standard, .oneToOne, hideBlocked: true,  .none,                   live: true,  pushOff: true,  pushOn: true,  history: true,  hiddenForever: false, moves: true),
        Cell(.standard, .oneToOne, hideBlocked: true,  .recipientBlockedSender, live: false, pushOff: false, pushOn: false, history: true,  hiddenForever: true,  moves: false),
        Cell(.standard, .oneToOne, hideBlocked: true,  .senderBlockedRecipient, live: true,  pushOff: true,  pushOn: true,  history: true,  hiddenForever: false, moves: true),
        Cell(.standard, .oneToOne, hideBlocked: true,  .both,                   live: false, pushOff: false, pushOn: false, history: true,  hiddenForever: true,  moves: false),

        // MARK: standard, 1-to-N — live unless hideBlocked, push only with pushFromBlockedUsers,
        // history unless hideBlocked, list moves.
        Cell(.standard, .group,    hideBlocked: false, .none,                   live: true,  pushOff: true,  pushOn: true,  history: true,  hiddenForever: false, moves: true),
        Cell(.standard, .group,    hideBlocked: false, .recipientBlockedSender, live: true,  pushOff: false, pushOn: true,  history: true,  hiddenForever: false, moves: true),
        Cell(.standard, .group,    hideBlocked: false, .senderBlockedRecipient, live: true,  pushOff: true,  pushOn: true,  history: true,  hiddenForever: false, moves: true),
        Cell(.standard, .group,    hideBlocked: false, .both,                   live: true,  pushOff: false, pushOn: true,  history: true,  hiddenForever: false, moves: true),
        Cell(.standard, .group,    hideBlocked: true,  .none,                   live: true,  pushOff: true,  pushOn: true,  history: true,  hiddenForever: false, moves: true),
        Cell(.standard, .group,    hideBlocked: true,  .recipientBlockedSender, live: false, pushOff: false, pushOn: true,  history: false, hiddenForever: false, moves: true),
        Cell(.standard, .group,    hideBlocked: true,  .senderBlockedRecipient, live: true,  pushOff: true,  pushOn: true,  history: true,  hiddenForever: false, moves: true),
        Cell(.standard, .group,    hideBlocked: true,  .both,                   live: false, pushOff: false, pushOn: true,  history: false, hiddenForever: false, moves: true),

        // MARK: standard, open — live "as 1-to-N", never push, history "yes".
        Cell(.standard, .open,     hideBlocked: false, .none,                   live: true,  pushOff: false, pushOn: false, history: true,  hiddenForever: false, moves: true),
        Cell(.standard, .open,     hideBlocked: false, .recipientBlockedSender, live: true,  pushOff: false, pushOn: false, history: true,  hiddenForever: false, moves: true),
        Cell(.standard, .open,     hideBlocked: false, .senderBlockedRecipient, live: true,  pushOff: false, pushOn: false, history: true,  hiddenForever: false, moves: true),
        Cell(.standard, .open,     hideBlocked: false, .both,                   live: true,  pushOff: false, pushOn: false, history: true,  hiddenForever: false, moves: true),
        Cell(.standard, .open,     hideBlocked: true,  .none,                   live: true,  pushOff: false, pushOn: false, history: true,  hiddenForever: false, moves: true),
        Cell(.standard, .open,     hideBlocked: true,  .recipientBlockedSender, live: false, pushOff: false, pushOn: false, history: true,  hiddenForever: false, moves: true),
        Cell(.standard, .open,     hideBlocked: true,  .senderBlockedRecipient, live: true,  pushOff: false, pushOn: false, history: true,  hiddenForever: false, moves: true),
        Cell(.standard, .open,     hideBlocked: true,  .both,                   live: false, pushOff: false, pushOn: false, history: true,  hiddenForever: false, moves: true),

        // MARK: strict, 1-to-1 — any block either way: nothing live, no push, not in history, hidden forever.
        Cell(.strict,   .oneToOne, hideBlocked: false, .none,                   live: true,  pushOff: true,  pushOn: true,  history: true,  hiddenForever: false, moves: true),
        Cell(.strict,   .oneToOne, hideBlocked: false, .recipientBlockedSender, live: false, pushOff: false, pushOn: false, history: false, hiddenForever: true,  moves: false),
        Cell(.strict,   .oneToOne, hideBlocked: false, .senderBlockedRecipient, live: false, pushOff: false, pushOn: false, history: false, hiddenForever: true,  moves: false),
        Cell(.strict,   .oneToOne, hideBlocked: false, .both,                   live: false, pushOff: false, pushOn: false, history: false, hiddenForever: true,  moves: false),
        Cell(.strict,   .oneToOne, hideBlocked: true,  .none,                   live: true,  pushOff: true,  pushOn: true,  history: true,  hiddenForever: false, moves: true),
        Cell(.strict,   .oneToOne, hideBlocked: true,  .recipientBlockedSender, live: false, pushOff: false, pushOn: false, history: false, hiddenForever: true,  moves: false),
        Cell(.strict,   .oneToOne, hideBlocked: true,  .senderBlockedRecipient, live: false, pushOff: false, pushOn: false, history: false, hiddenForever: true,  moves: false),
        Cell(.strict,   .oneToOne, hideBlocked: true,  .both,                   live: false, pushOff: false, pushOn: false, history: false, hiddenForever: true,  moves: false),

        // MARK: strict, 1-to-N — any block either way cuts live, push (even with pushFromBlockedUsers), history, list.
        Cell(.strict,   .group,    hideBlocked: false, .none,                   live: true,  pushOff: true,  pushOn: true,  history: true,  hiddenForever: false, moves: true),
        Cell(.strict,   .group,    hideBlocked: false, .recipientBlockedSender, live: false, pushOff: false, pushOn: false, history: false, hiddenForever: false, moves: false),
        Cell(.strict,   .group,    hideBlocked: false, .senderBlockedRecipient, live: false, pushOff: false, pushOn: false, history: false, hiddenForever: false, moves: false),
        Cell(.strict,   .group,    hideBlocked: false, .both,                   live: false, pushOff: false, pushOn: false, history: false, hiddenForever: false, moves: false),
        Cell(.strict,   .group,    hideBlocked: true,  .none,                   live: true,  pushOff: true,  pushOn: true,  history: true,  hiddenForever: false, moves: true),
        Cell(.strict,   .group,    hideBlocked: true,  .recipientBlockedSender, live: false, pushOff: false, pushOn: false, history: false, hiddenForever: false, moves: false),
        Cell(.strict,   .group,    hideBlocked: true,  .senderBlockedRecipient, live: false, pushOff: false, pushOn: false, history: false, hiddenForever: false, moves: false),
        Cell(.strict,   .group,    hideBlocked: true,  .both,                   live: false, pushOff: false, pushOn: false, history: false, hiddenForever: false, moves: false),

        // MARK: strict, open — as 1-to-N, and open channels never push.
        Cell(.strict,   .open,     hideBlocked: false, .none,                   live: true,  pushOff: false, pushOn: false, history: true,  hiddenForever: false, moves: true),
        Cell(.strict,   .open,     hideBlocked: false, .recipientBlockedSender, live: false, pushOff: false, pushOn: false, history: false, hiddenForever: false, moves: false),
        Cell(.strict,   .open,     hideBlocked: false, .senderBlockedRecipient, live: false, pushOff: false, pushOn: false, history: false, hiddenForever: false, moves: false),
        Cell(.strict,   .open,     hideBlocked: false, .both,                   live: false, pushOff: false, pushOn: false, history: false, hiddenForever: false, moves: false),
        Cell(.strict,   .open,     hideBlocked: true,  .none,                   live: true,  pushOff: false, pushOn: false, history: true,  hiddenForever: false, moves: true),
        Cell(.strict,   .open,     hideBlocked: true,  .recipientBlockedSender, live: false, pushOff: false, pushOn: false, history: false, hiddenForever: false, moves: false),
        Cell(.strict,   .open,     hideBlocked: true,  .senderBlockedRecipient, live: false, pushOff: false, pushOn: false, history: false, hiddenForever: false, moves: false),
        Cell(.strict,   .open,     hideBlocked: true,  .both,                   live: false, pushOff: false, pushOn: false, history: false, hiddenForever: false, moves: false),
    ]
    // swiftlint:enable line_length

    @Test("the table has exactly one cell per mode × kind × hideBlocked × relation")
    func tableIsComplete() {
        #expect(Self.table.count == 2 * 3 * 2 * 4)
        var seen = Set<String>()
        for cell in Self.table { seen.insert(cell.testDescription) }
        #expect(seen.count == Self.table.count)
        for mode in DeliveryPolicy.Mode.allCases {
            for kind in DeliveryPolicy.ChannelKind.allCases {
                for hideBlocked in [false, true] {
                    for rel in Rel.allCases {
                        #expect(seen.contains("\(mode) \(kind) hideBlocked=\(hideBlocked) \(rel.rawValue)"))
                    }
                }
            }
        }
    }

    @Test("§5 live delivery to A's connection", arguments: table)
    func live(_ cell: Cell) {
        let actual = DeliveryPolicy.deliversLive(kind: cell.kind, mode: cell.mode, relation: cell.rel.relation,
                                                 hideBlocked: cell.hideBlocked)
        #expect(actual == cell.live, "deliversLive for \(cell.testDescription)")
    }

    @Test("§5 push to A when offline, pushFromBlockedUsers false and true", arguments: table)
    func push(_ cell: Cell) {
        let off = DeliveryPolicy.pushes(kind: cell.kind, mode: cell.mode, relation: cell.rel.relation,
                                        pushFromBlockedUsers: false)
        let on = DeliveryPolicy.pushes(kind: cell.kind, mode: cell.mode, relation: cell.rel.relation,
                                       pushFromBlockedUsers: true)
        #expect(off == cell.pushOff, "pushes(pushFromBlockedUsers: false) for \(cell.testDescription)")
        #expect(on == cell.pushOn, "pushes(pushFromBlockedUsers: true) for \(cell.testDescription)")
    }

    @Test("§5 A's message.history (read-time rule)", arguments: table)
    func history(_ cell: Cell) {
        let actual = DeliveryPolicy.showsInHistory(kind: cell.kind, mode: cell.mode, relation: cell.rel.relation,
                                                   hideBlocked: cell.hideBlocked)
        #expect(actual == cell.history, "showsInHistory for \(cell.testDescription)")
    }

    @Test("§5 hidden from A's history forever (flag stored at send time)", arguments: table)
    func hiddenForever(_ cell: Cell) {
        let actual = DeliveryPolicy.hiddenForever(kind: cell.kind, mode: cell.mode, relation: cell.rel.relation)
        #expect(actual == cell.hiddenForever, "hiddenForever for \(cell.testDescription)")
    }

    @Test("§5 A's channel list (lastMessage, lastActivityAt) moves", arguments: table)
    func channelList(_ cell: Cell) {
        let actual = DeliveryPolicy.movesChannelList(kind: cell.kind, mode: cell.mode, relation: cell.rel.relation)
        #expect(actual == cell.moves, "movesChannelList for \(cell.testDescription)")
    }

    /// What A ends up seeing in history for a message sent during the block:
    /// hidden when either the stored flag or the read-time rule hides it.
    @Test("§5 combined: a message sent during the block shows in A's history", arguments: table)
    func historyWhileBlocked(_ cell: Cell) {
        let relation = cell.rel.relation
        let shown = !DeliveryPolicy.hiddenForever(kind: cell.kind, mode: cell.mode, relation: relation)
            && DeliveryPolicy.showsInHistory(kind: cell.kind, mode: cell.mode, relation: relation,
                                             hideBlocked: cell.hideBlocked)
        // 1-to-1: "never" for A (both ways in strict); otherwise the read-time cell.
        let expected = !cell.hiddenForever && cell.history
        #expect(shown == expected)
        if cell.kind == .oneToOne && cell.rel != .none && (cell.mode == .strict || cell.rel != .senderBlockedRecipient) {
            #expect(!shown, "1-to-1 messages sent during the block are never shown to the blocker")
        }
    }

    @Test("§5 after unblock: a 1-to-1 message sent during the block stays hidden (flag), new ones show")
    func unblockKeepsHiddenForever() {
        for mode in DeliveryPolicy.Mode.allCases {
            let during = Rel.recipientBlockedSender.relation
            let flag = DeliveryPolicy.hiddenForever(kind: .oneToOne, mode: mode, relation: during)
            #expect(flag, "\(mode): flag stored while A blocked B")
            // After unblock the read-time relation is .none: the read-time rule shows, the flag still hides.
            #expect(DeliveryPolicy.showsInHistory(kind: .oneToOne, mode: mode, relation: .none, hideBlocked: false))
            // A new message after unblock is delivered, pushed and not flagged.
            #expect(DeliveryPolicy.deliversLive(kind: .oneToOne, mode: mode, relation: .none, hideBlocked: true))
            #expect(DeliveryPolicy.pushes(kind: .oneToOne, mode: mode, relation: .none, pushFromBlockedUsers: false))
            #expect(!DeliveryPolicy.hiddenForever(kind: .oneToOne, mode: mode, relation: .none))
        }
    }

    @Test("Channel.kind: 1-to-1 group, 1-to-N group, open")
    func channelKind() {
        let oneToOne = Channel(id: "c1", type: .group, members: ["a", "b"], isOneToOne: true, createdAt: 0, createdBy: "a")
        let group = Channel(id: "c2", type: .group, members: ["a", "b"], isOneToOne: false, createdAt: 0, createdBy: "a")
        let open = Channel(id: "c3", type: .open, members: ["a", "b"], isOneToOne: false, createdAt: 0, createdBy: "a")
        #expect(oneToOne.kind == .oneToOne)
        #expect(group.kind == .group)
        #expect(open.kind == .open)
    }

    @Test("Relation.none is no block either way")
    func relationNone() {
        #expect(DeliveryPolicy.Relation.none.recipientBlockedSender == false)
        #expect(DeliveryPolicy.Relation.none.senderBlockedRecipient == false)
    }
}
