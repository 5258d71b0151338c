import ChatCore
import Storage
import Testing

/// A store judges each new message against its channel as committed (§16, `SendAdmission`):
/// the steps both backends run (`ModerationStorageTests`, `PostgresModerationTests`), each
/// write with the answer it must get. A step of one write commits alone; a step of several
/// commits them as one batch, in order.
enum SendAdmissionScenario {
    enum Expected: Equatable, CustomStringConvertible {
        case done
        case stored(hiddenFrom: UserID?)
        case refused(ChangeRefusal)
        /// The message stored earlier under the same `clientMessageId`, answered by its id.
        case existing(MessageID)
        case failed

        var description: String {
            switch self {
            case .done: "done"
            case .stored(let hiddenFrom): "stored hidden from \(hiddenFrom ?? "nobody")"
            case .refused(let refusal): "refused \(refusal)"
            case .existing(let id): "existing \(id)"
            case .failed: "failed"
            }
        }
    }

    struct Step {
        var note: String
        var writes: [(write: StoreWrite, expected: Expected)]
    }

    static let channelID: ChannelID = "gate"
    static let members: [UserID] = ["alice", "bob", "carol", "dave", "erin", "frank", "gina", "hank"]
    /// Every user the steps name; zed is no member.
    static let users: [UserID] = members + ["zed"]
    /// The viewers whose history the checks read at the end.
    static let viewers: [UserID] = ["alice", "erin", "gina", "zed"]

    /// The channel as created: alice created it (owner by that alone), nobody else has a role.
    static let created = Channel(id: channelID, type: .group, name: "Gate", members: members, createdAt: 2_000,
                                 createdBy: "alice")

    static func send(_ id: MessageID, from sender: UserID, at createdAt: Milliseconds = 3_000, clientMessageID: String? = nil,
                     hiddenFrom: UserID? = nil) -> StoreWrite {
        .insertMessage(Fixture.message(id, in: channelID, from: sender, clientMessageID: clientMessageID, hiddenFrom: hiddenFrom,
                                       at: createdAt))
    }

    static var steps: [Step] {
        var channel = created
        var steps: [Step] = []
        func step(_ note: String, _ writes: (StoreWrite, Expected)...) {
            steps.append(Step(note: note, writes: writes.map { (write: $0.0, expected: $0.1) }))
        }
        func update(_ change: (inout Channel) -> Void) -> StoreWrite {
            change(&channel)
            return .updateChannel(channel)
        }
        func user(_ id: UserID, ban: Ban?) -> StoreWrite {
            var user = Fixture.user(id)
            user.ban = ban
            return .upsertUser(user)
        }
        let star = Message.hiddenFromEveryone

        step("a member sends", (send("a-1", from: "alice"), .stored(hiddenFrom: nil)))
        step("no member", (send("z-1", from: "zed"), .refused(.senderNotInChannel)))
        step("no user at all", (send("n-1", from: "nobody"), .refused(.senderNotInChannel)))

        // A plain ban in an earlier commit: dave is out; his retry of a message stored before still answers.
        step("dave before his ban", (send("d-1", from: "dave", clientMessageID: "d1"), .stored(hiddenFrom: nil)))
        step("dave banned", (update { $0.members.removeAll { $0 == "dave" }; $0.bans["dave"] = Ban() }, .done))
        step("dave after his ban", (send("d-2", from: "dave", clientMessageID: "d2"), .refused(.senderNotInChannel)))
        step("dave retries a message stored before his ban",
             (send("d-1-again", from: "dave", clientMessageID: "d1"), .existing("d-1")))

        // A plain ban in the same batch counts from where it stands in it.
        step("carol banned within a batch",
             (send("c-1", from: "carol", clientMessageID: "c1"), .stored(hiddenFrom: nil)),
             (update { $0.members.removeAll { $0 == "carol" }; $0.bans["carol"] = Ban() }, .done),
             (send("c-2", from: "carol"), .refused(.senderNotInChannel)),
             (send("c-1-again", from: "carol", clientMessageID: "c1"), .existing("c-1")))

        // Frozen: members are refused; the creator, owners and moderators send.
        step("frozen within a batch",
             (update { $0.frozen = true; $0.roles = ["bob": .moderator, "frank": .owner] }, .done),
             (send("e-1", from: "erin"), .refused(.channelFrozen)),
             (send("a-2", from: "alice"), .stored(hiddenFrom: nil)),
             (send("b-1", from: "bob"), .stored(hiddenFrom: nil)),
             (send("f-1", from: "frank"), .stored(hiddenFrom: nil)))
        step("frozen, a member in a later commit", (send("e-2", from: "erin"), .refused(.channelFrozen)))
        step("frozen, the creator named a member",
             (update { $0.roles["alice"] = .member }, .done),
             (send("a-3", from: "alice"), .refused(.channelFrozen)),
             (send("b-2", from: "bob"), .stored(hiddenFrom: nil)))
        step("no more frozen", (update { $0.frozen = false; $0.roles = [:] }, .done))
        step("a member once unfrozen", (send("e-3", from: "erin"), .stored(hiddenFrom: nil)))

        // Shadow bans from the channel: stored, hidden from everyone but the sender, while in force.
        step("gina and hank shadow-banned",
             (update { $0.bans["gina"] = Ban(shadow: true); $0.bans["hank"] = Ban(shadow: true, untilMs: 5_000) }, .done))
        step("gina", (send("g-1", from: "gina"), .stored(hiddenFrom: star)))
        step("gina, hidden from one by the engine", (send("g-2", from: "gina", hiddenFrom: "alice"), .stored(hiddenFrom: star)))
        step("hank before his ban ends", (send("h-1", from: "hank", at: 4_999), .stored(hiddenFrom: star)))
        step("hank when his ban has ended", (send("h-2", from: "hank", at: 5_000), .stored(hiddenFrom: nil)))
        step("a `*` the engine set stays", (send("e-4", from: "erin", hiddenFrom: star), .stored(hiddenFrom: star)))

        // App-wide shadow bans (the user row), and their lifting.
        step("erin shadow-banned app-wide", (user("erin", ban: Ban(shadow: true)), .done))
        step("erin", (send("e-5", from: "erin"), .stored(hiddenFrom: star)))
        step("frank shadow-banned app-wide until 5000", (user("frank", ban: Ban(shadow: true, untilMs: 5_000)), .done))
        step("frank before the end", (send("f-2", from: "frank", at: 4_999), .stored(hiddenFrom: star)))
        step("frank after the end", (send("f-3", from: "frank", at: 5_000), .stored(hiddenFrom: nil)))
        step("a plain app-wide ban hides nothing",
             (user("bob", ban: Ban()), .done),
             (send("b-3", from: "bob"), .stored(hiddenFrom: nil)))
        step("erin's app-wide ban lifted", (user("erin", ban: nil), .done))
        step("erin once lifted", (send("e-6", from: "erin"), .stored(hiddenFrom: nil)))

        // Shadow bans within a batch; a retry of a message stored before the ban.
        step("alice shadow-banned within a batch",
             (send("a-4", from: "alice", clientMessageID: "a4"), .stored(hiddenFrom: nil)),
             (update { $0.bans["alice"] = Ban(shadow: true) }, .done),
             (send("a-5", from: "alice"), .stored(hiddenFrom: star)),
             (send("a-4-again", from: "alice", clientMessageID: "a4"), .existing("a-4")))
        step("alice retries in a later commit", (send("a-4-later", from: "alice", clientMessageID: "a4"), .existing("a-4")))
        step("bob shadow-banned app-wide within a batch",
             (send("b-4", from: "bob"), .stored(hiddenFrom: nil)),
             (user("bob", ban: Ban(shadow: true)), .done),
             (send("b-5", from: "bob"), .stored(hiddenFrom: star)))

        // A channel write that fails is undone: the next message is judged by the channel as it was.
        var failing = channel
        failing.members.removeAll { $0 == "erin" }
        failing.members.append("alice")  // a member twice: the member rows refuse it
        failing.bans["erin"] = Ban()
        step("a failed ban of erin",
             (send("e-7", from: "erin"), .stored(hiddenFrom: nil)),
             (.updateChannel(failing), .failed),
             (send("e-8", from: "erin"), .stored(hiddenFrom: nil)))
        return steps
    }

    /// Whether `result` is the answer `expected` names.
    static func matches(_ result: Result<StoreWriteResult, StoreError>, _ expected: Expected) -> Bool {
        switch (result, expected) {
        case (.success(.done), .done), (.success(.channel), .done): true
        case (.success(.message(let message)), .stored(let hiddenFrom)): message.hiddenFrom == hiddenFrom
        case (.success(.refused(let refusal)), .refused(let expected)): refusal == expected
        case (.success(.existingMessage(let message)), .existing(let id)): message.id == id
        case (.failure, .failed): true
        default: false
        }
    }

    /// Runs every step (`commit` one write alone, `batch` several as one group commit) and
    /// checks each answer; returns the messages stored, by seq.
    static func run(commit: (StoreWrite) async -> Result<StoreWriteResult, StoreError>,
                    batch: ([StoreWrite]) async throws -> [Result<StoreWriteResult, StoreError>]) async throws -> [Message] {
        var stored: [Message] = []
        for step in steps {
            let results = step.writes.count == 1
                ? [await commit(step.writes[0].write)] : try await batch(step.writes.map(\.write))
            #expect(results.count == step.writes.count, "\(step.note)")
            for (result, (write, expected)) in zip(results, step.writes) {
                #expect(matches(result, expected), "\(step.note): \(write) answered \(result), expected \(expected)")
                if case .success(.message(let message)) = result { stored.append(message) }
            }
        }
        return stored.sorted { $0.seq < $1.seq }
    }

    /// What `viewer` reads of `stored` (nothing refused was stored; `*` only for its sender).
    static func visible(_ stored: [Message], to viewer: UserID) -> [MessageID] {
        stored.filter { !$0.isHidden(from: viewer) }.map(\.id)
    }
}
