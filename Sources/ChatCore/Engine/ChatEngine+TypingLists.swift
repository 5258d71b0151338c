/// A connection judged on its own for a channel's `typing.users` lists (blocked with
/// someone, shadow-banned, muting someone): the list it last got is kept under this.
struct TypingListView: Hashable, Sendable {
    var channel: ChannelID
    var session: SessionID
}

extension ChatEngine {
    /// At most this many typists are named in a `typing.users` event; `count` says how many
    /// there are in all.
    public static let typingListNames = 20

    /// Whether typing in `channel` is told as `typing.users` lists (PROTOCOL.md §14: channels
    /// with more members than `limits.typingListAboveMembers`).
    func listsTyping(in channel: Channel) -> Bool {
        settings.typingListAboveMembers > 0 && channel.members.count > settings.typingListAboveMembers
    }

    /// A typist started or stopped in a listing channel (decided here or relayed).
    mutating func typingListChanged(_ channel: Channel, user: UserID, typing: Bool,
                                    monotonicNow: Milliseconds) -> [EngineEffect] {
        typingListEffects(channel.id, typingLists.changed(channel.id, user: user, typing: typing, now: monotonicNow))
    }

    /// A channel's list check is due: stale typists leave it, and the list goes out if it
    /// changed since the last one.
    public mutating func typingListDue(_ channelID: ChannelID, token: UInt64, monotonicNow: Milliseconds) -> [EngineEffect] {
        typingListEffects(channelID, typingLists.due(channelID, token: token, now: monotonicNow))
    }

    private mutating func typingListEffects(_ channelID: ChannelID, _ outcome: TypingSummaries.Outcome) -> [EngineEffect] {
        var effects: [EngineEffect] = []
        if outcome.send, let channel = directory.channels[channelID] { effects += publishTypingList(channel) }
        if let after = outcome.checkAfter {
            effects.append(.checkTypingListLater(channelID, token: outcome.checkToken, afterMilliseconds: after))
        }
        if !typingLists.isListing(channelID), typingListViews.keys.contains(where: { $0.channel == channelID }) {
            typingListViews = typingListViews.filter { $0.key.channel != channelID }
        }
        return effects
    }

    /// `typing.users` to every connection of the channel here, each listing the typists it
    /// may hear: whom §5 keeps its messages from (a block in strict mode, a `hideBlocked`
    /// connection), a shadow-banned typist (§16, only himself) and whom it muted are left
    /// out. One payload for everyone blocked with nobody; the few others are judged
    /// connection by connection.
    private mutating func publishTypingList(_ channel: Channel) -> [EngineEffect] {
        let typists = typingLists.typists(in: channel.id).filter { isMember($0, of: channel) }
        var judged = relatedMembers(of: channel)
        let shadowBanned = directory.shadowBanned(in: channel)
        for typist in typists {
            if shadowBanned.contains(typist) { judged.insert(typist) }
            for muter in directory.muters(of: typist) where isMember(muter, of: channel) { judged.insert(muter) }
        }
        let everyone = MessageViewer(user: "", hideBlocked: false, kind: channel.kind, mode: settings.blockingMode,
                                     relations: shadowRelations(in: channel, seenBy: ""))
        var effects: [EngineEffect] = [
            .publishChange(channel.id, payload: Self.typingUsers(channel.id, typists.filter { everyone.hears($0) }),
                           skipping: Set(judged.map { number(for: $0) }), excluding: nil),
        ]
        // A connection whose list did not change gets nothing: a list that moved only for
        // typists it may not hear would tell it that they type.
        var bySessions: [[UInt8]: [SessionID]] = [:]
        for user in judged.sorted() where isMember(user, of: channel) {
            let muted = Set(typists.filter { directory.muters(of: $0).contains(user) })
            for session in sessions.sessions(of: user) {
                let viewer = viewer(user, hideBlocked: sessions.hidesBlocked(session), in: channel)
                let heard = typists.filter { viewer.hears($0) && !muted.contains($0) }
                let view = TypingListView(channel: channel.id, session: session)
                guard heard != typingListViews[view] ?? [] else { continue }
                typingListViews[view] = heard.isEmpty ? nil : heard
                bySessions[Self.typingUsers(channel.id, heard), default: []].append(session)
            }
        }
        for (bytes, ids) in bySessions.sorted(by: { $0.value[0] < $1.value[0] }) {
            effects.append(.publishToSessions(ids, payload: bytes))
        }
        return effects
    }

    /// `{"type":"event","event":"typing.users","data":{"channelId","userIds","count"}}`: the
    /// first `typingListNames` typists by when they started, and how many there are.
    static func typingUsers(_ channelID: ChannelID, _ typists: [UserID]) -> [UInt8] {
        WireEncoding.event("typing.users") { w in
            w.beginObject()
            w.key("channelId"); w.string(channelID)
            w.key("userIds")
            w.beginArray()
            for typist in typists.prefix(typingListNames) { w.string(typist) }
            w.endArray()
            w.key("count"); w.int(typists.count)
            w.endObject()
        }
    }
}
