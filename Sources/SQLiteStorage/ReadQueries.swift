import ChatCore
import Storage

/// The read-side SQL: history pages, idempotency lookups and the start-up snapshot.
/// Each function runs on a connection its caller owns and resets every
/// statement it used, so no read transaction stays open (WAL checkpoints can
/// proceed, and the next read sees every commit).
enum ReadQueries {
    private static let visible = "channel_id = ?1 AND \(visible(to: "?2"))"

    /// Whether `viewer` (an SQL expression) may read a message row: it is not stored hidden
    /// from the viewer (§5), nor hidden from everyone but its sender (§16, `*`; no user id can
    /// be `*`), as `Message.isHidden(from:)` says. A filter on the rows the scan reads, so a
    /// page's `LIMIT` counts only rows the viewer sees.
    private static func visible(to viewer: String) -> String {
        """
        (hidden_from IS NULL OR (hidden_from <> \(viewer) \
        AND (hidden_from <> '\(Message.hiddenFromEveryone)' OR sender_id = \(viewer))))
        """
    }

    /// See `Store.history`. With both bounds: the first `limit` after `afterSeq`
    /// that are also before `beforeSeq`.
    static func history(on connection: SQLiteConnection, channelID: ChannelID, viewer: UserID,
                        beforeSeq: Int64?, afterSeq: Int64?, limit: Int, thread: Int64? = nil) throws(StoreError) -> [Message] {
        guard limit > 0 else { return [] }
        let columns = RowMapping.messageColumns
        // ?5: the thread; NULL matches every message of the channel.
        let scope = "\(visible) AND (?5 IS NULL OR parent_seq = ?5)"
        let statement: SQLiteStatement
        let newestFirst: Bool
        switch (beforeSeq, afterSeq) {
        case (nil, nil):
            statement = try connection.statement(
                "SELECT \(columns) FROM messages WHERE \(scope) ORDER BY seq DESC LIMIT ?3")
            newestFirst = true
        case (let before?, nil):
            statement = try connection.statement(
                "SELECT \(columns) FROM messages WHERE \(scope) AND seq < ?4 ORDER BY seq DESC LIMIT ?3")
            try statement.bind(before, at: 4)
            newestFirst = true
        case (nil, let after?):
            statement = try connection.statement(
                "SELECT \(columns) FROM messages WHERE \(scope) AND seq > ?4 ORDER BY seq ASC LIMIT ?3")
            try statement.bind(after, at: 4)
            newestFirst = false
        case (let before?, let after?):
            statement = try connection.statement(
                "SELECT \(columns) FROM messages WHERE \(scope) AND seq > ?4 AND seq < ?6 ORDER BY seq ASC LIMIT ?3")
            try statement.bind(after, at: 4)
            try statement.bind(before, at: 6)
            newestFirst = false
        }
        try statement.bind(channelID, at: 1)
        try statement.bind(viewer, at: 2)
        try statement.bind(limit, at: 3)
        try statement.bind(thread, at: 5)
        var messages: [Message] = try statement.withReset { row throws(StoreError) in
            var messages: [Message] = []
            while try row.step() { messages.append(RowMapping.message(from: row)) }
            return messages
        }
        if newestFirst { messages.reverse() }
        return messages
    }

    /// See `Store.changes`.
    static func changes(on connection: SQLiteConnection, channelID: ChannelID, viewer: UserID, afterVersion: Int64,
                        limit: Int) throws(StoreError) -> [Message] {
        guard limit > 0 else { return [] }
        let columns = RowMapping.messageColumns
        // Two kinds of message have a version after ?3: those created since, unchanged (their
        // version is their created_version, which rises with seq, so they are a run of seqs
        // from the first one created after ?3, found by a binary search over seq), and those
        // changed since creation (the partial index). `created_version ≤ version` and seqs
        // run 1…last_seq without gaps; the `version > ?3` on the first part keeps the answer
        // right even where the search stopped early.
        let statement = try connection.statement("""
            WITH RECURSIVE search(low, high) AS (
                SELECT 1, min(?3, coalesce((SELECT last_seq FROM channels WHERE id = ?1), 0)) + 1
                UNION ALL
                SELECT CASE WHEN m.created_version > ?3 THEN s.low ELSE (s.low + s.high) / 2 + 1 END,
                       CASE WHEN m.created_version > ?3 THEN (s.low + s.high) / 2 ELSE s.high END
                FROM search s JOIN messages m ON m.channel_id = ?1 AND m.seq = (s.low + s.high) / 2
                WHERE s.low < s.high
            )
            SELECT * FROM (
                SELECT \(columns) FROM messages WHERE \(visible) AND seq >= (SELECT max(low) FROM search)
                AND version = created_version AND version > ?3 ORDER BY seq ASC LIMIT ?4
            )
            UNION ALL
            SELECT * FROM (
                SELECT \(columns) FROM messages WHERE \(visible) AND version <> created_version AND version > ?3
                ORDER BY version ASC, seq ASC LIMIT ?4
            )
            ORDER BY version ASC, seq ASC LIMIT ?4
            """)
        try statement.bind(channelID, at: 1)
        try statement.bind(viewer, at: 2)
        try statement.bind(afterVersion, at: 3)
        try statement.bind(limit, at: 4)
        return try statement.withReset { row throws(StoreError) in
            var messages: [Message] = []
            while try row.step() { messages.append(RowMapping.message(from: row)) }
            return messages
        }
    }

    /// See `Store.attributions`: one indexed range read per user, and one for the threads.
    static func attributions(on connection: SQLiteConnection, channelID: ChannelID, seqs: ClosedRange<Int64>,
                             users: Set<UserID>, viewer: UserID) throws(StoreError) -> MessageAttributions {
        var result = MessageAttributions()
        let reactions = try connection.statement("""
            SELECT seq, kind FROM reactions WHERE channel_id = ?1 AND user_id = ?2 AND seq BETWEEN ?3 AND ?4
            """)
        for user in users.sorted() {
            try reactions.bind(channelID, at: 1)
            try reactions.bind(user, at: 2)
            try reactions.bind(seqs.lowerBound, at: 3)
            try reactions.bind(seqs.upperBound, at: 4)
            let rows: [MessageAttributions.Reaction] = try reactions.withReset { row throws(StoreError) in
                var rows: [MessageAttributions.Reaction] = []
                while try row.step() { rows.append(.init(seq: row.int64(0), user: user, kind: row.text(1))) }
                return rows
            }
            result.reactions += rows
        }
        let replies = try connection.statement("""
            SELECT parent_seq, sender_id, hidden_from, count(*) FROM messages
            WHERE channel_id = ?1 AND parent_seq BETWEEN ?2 AND ?3
            GROUP BY parent_seq, sender_id, hidden_from
            """)
        try replies.bind(channelID, at: 1)
        try replies.bind(seqs.lowerBound, at: 2)
        try replies.bind(seqs.upperBound, at: 3)
        result.replies = try replies.withReset { row throws(StoreError) in
            var rows: [MessageAttributions.Replies] = []
            while try row.step() {
                let tally = ReplyTally(sender: row.text(1), hiddenFrom: row.optionalText(2), count: Int(row.int64(3)))
                guard users.contains(tally.sender) || isHidden(tally, from: viewer) else { continue }
                rows.append(.init(parentSeq: row.int64(0), tally: tally))
            }
            return rows
        }
        return result
    }

    /// Whether the replies of `tally` are hidden from `viewer` (as `visible(to:)`): those
    /// stored hidden from it, and those hidden from everyone but a sender other than it.
    private static func isHidden(_ tally: ReplyTally, from viewer: UserID) -> Bool {
        guard let hiddenFrom = tally.hiddenFrom else { return false }
        return hiddenFrom == viewer || (hiddenFrom == Message.hiddenFromEveryone && tally.sender != viewer)
    }

    /// See `Store.messageStates`.
    static func messageStates(on connection: SQLiteConnection, channelID: ChannelID, seqs: [Int64]) throws(StoreError) -> [MessageState] {
        let message = try connection.statement(
            "SELECT \(RowMapping.messageColumns) FROM messages WHERE channel_id = ?1 AND seq = ?2")
        let reactions = try connection.statement("SELECT user_id, kind FROM reactions WHERE channel_id = ?1 AND seq = ?2")
        let replies = try connection.statement("""
            SELECT sender_id, hidden_from, count(*) FROM messages WHERE channel_id = ?1 AND parent_seq = ?2
            GROUP BY sender_id, hidden_from
            """)
        var states: [MessageState] = []
        for seq in Set(seqs).sorted() {
            try message.bind(channelID, at: 1)
            try message.bind(seq, at: 2)
            guard let stored = try message.withReset({ row throws(StoreError) in try row.step() ? RowMapping.message(from: row) : nil })
            else { continue }
            var state = MessageState(message: stored)
            try reactions.bind(channelID, at: 1)
            try reactions.bind(seq, at: 2)
            state.reactors = try reactions.withReset { row throws(StoreError) in
                var reactors: [String: Set<UserID>] = [:]
                while try row.step() { reactors[row.text(1), default: []].insert(row.text(0)) }
                return reactors
            }
            try replies.bind(channelID, at: 1)
            try replies.bind(seq, at: 2)
            state.replies = try replies.withReset { row throws(StoreError) in
                var tallies: [ReplyTally] = []
                while try row.step() {
                    tallies.append(ReplyTally(sender: row.text(0), hiddenFrom: row.optionalText(1), count: Int(row.int64(2))))
                }
                return tallies
            }
            states.append(state)
        }
        return states
    }

    static func message(on connection: SQLiteConnection, sender: UserID, clientMessageID: String) throws(StoreError) -> Message? {
        let statement = try connection.statement("""
            SELECT \(RowMapping.messageColumns) FROM messages
            WHERE sender_id = ?1 AND client_message_id = ?2 AND client_message_id IS NOT NULL
            """)
        try statement.bind(sender, at: 1)
        try statement.bind(clientMessageID, at: 2)
        return try statement.withReset { row throws(StoreError) in try row.step() ? RowMapping.message(from: row) : nil }
    }

    static func users(on connection: SQLiteConnection, _ ids: [UserID]) throws(StoreError) -> [User] {
        let statement = try connection.statement("SELECT \(RowMapping.userColumns) FROM users WHERE id = ?1")
        var users: [User] = []
        for id in Set(ids) {
            try statement.bind(id, at: 1)
            if let user = try statement.withReset({ row throws(StoreError) in try row.step() ? RowMapping.user(from: row) : nil }) {
                users.append(user)
            }
        }
        return users
    }

    /// See `Store.flags`.
    static func flags(on connection: SQLiteConnection, limit: Int, afterID: Int64?) throws(StoreError) -> [Flag] {
        guard limit > 0 else { return [] }
        let statement = try connection.statement(
            "SELECT \(RowMapping.flagColumns) FROM flags WHERE id > ?1 ORDER BY id ASC LIMIT ?2")
        try statement.bind(afterID ?? Int64.min, at: 1)
        try statement.bind(limit, at: 2)
        return try statement.withReset { row throws(StoreError) in
            var flags: [Flag] = []
            while try row.step() { flags.append(RowMapping.flag(from: row)) }
            return flags
        }
    }

    /// Everything in one read transaction, so the parts agree with each other.
    static func snapshot(on connection: SQLiteConnection) throws(StoreError) -> StoreSnapshot {
        try connection.execute("BEGIN")
        defer { try? connection.execute("COMMIT") }
        var snapshot = StoreSnapshot()
        snapshot.users = try rows(on: connection, "SELECT \(RowMapping.userColumns) FROM users ORDER BY rowid") {
            row throws(StoreError) in try RowMapping.user(from: row)
        }
        let members = try rows(on: connection, "SELECT channel_id, user_id FROM channel_members ORDER BY channel_id, position") {
            row throws(StoreError) in (row.text(0), row.text(1))
        }
        var membersByChannel: [ChannelID: [UserID]] = [:]
        for (channelID, userID) in members { membersByChannel[channelID, default: []].append(userID) }
        snapshot.channels = try rows(on: connection, "SELECT \(RowMapping.channelColumns) FROM channels ORDER BY rowid") {
            row throws(StoreError) in
            var channel = try RowMapping.channel(from: row)
            channel.members = membersByChannel[channel.id] ?? []
            return channel
        }
        snapshot.blocks = try rows(on: connection, "SELECT blocker, blocked FROM blocks ORDER BY created_at, blocker, blocked") {
            row throws(StoreError) in (blocker: row.text(0), blocked: row.text(1))
        }
        snapshot.take(try Self.streams(on: connection, of: nil))
        return snapshot
    }

    /// The stored state of `channels`' streams (every channel when nil) in one read
    /// transaction (`Store.streams(of:)`).
    static func streams(on connection: SQLiteConnection, of channels: [ChannelID]?) throws(StoreError) -> ChannelStreams {
        guard let channels else { return try streamsInTransaction(on: connection, of: nil) }
        try connection.execute("BEGIN")
        defer { try? connection.execute("COMMIT") }
        return try streamsInTransaction(on: connection, of: channels)
    }

    private static func streamsInTransaction(on connection: SQLiteConnection, of channels: [ChannelID]?) throws(StoreError) -> ChannelStreams {
        // Every channel (1), or the one bound to ?1 in turn.
        let filter = channels == nil ? "1" : "c.id = ?1"
        var streams = ChannelStreams(channels: channels ?? [])
        let lastColumns = RowMapping.messageColumns.split(separator: ",").map { "m." + $0.trimmingSpaces }.joined(separator: ", ")
        let versions = try connection.statement("SELECT c.id, c.version FROM channels c WHERE c.version > 0 AND \(filter)")
        let last = try connection.statement("""
            SELECT \(lastColumns) FROM channels c JOIN messages m ON m.channel_id = c.id AND m.seq = c.last_seq
            WHERE \(filter) ORDER BY c.rowid
            """)
        let marks = try connection.statement(
            "SELECT channel_id, user_id, last_read_seq FROM read_marks WHERE \(channels == nil ? "1" : "channel_id = ?1")")
        let headers = try connection.statement("""
            SELECT m.channel_id, m.seq, m.sender_id, m.hidden_from, m.deleted_at IS NOT NULL
            FROM channels c JOIN messages m ON m.channel_id = c.id
                AND m.seq > max(c.last_seq - \(StoreSnapshot.unreadWindow),
                                coalesce((SELECT min(r.last_read_seq) FROM read_marks r WHERE r.channel_id = c.id), c.last_seq))
            WHERE \(filter)
            ORDER BY m.channel_id, m.seq
            """)
        let bound: [ChannelID?] = channels ?? [nil]
        for channel in bound {
            if let channel {
                for statement in [versions, last, marks, headers] { try statement.bind(channel, at: 1) }
            }
            try versions.withReset { row throws(StoreError) in
                while try row.step() { streams.versions[row.text(0)] = row.int64(1) }
            }
            try last.withReset { row throws(StoreError) in
                while try row.step() { streams.lastMessages.append(RowMapping.message(from: row)) }
            }
            try marks.withReset { row throws(StoreError) in
                while try row.step() {
                    streams.readMarks.append(ReadMark(channelID: row.text(0), userID: row.text(1), lastReadSeq: row.int64(2)))
                }
            }
            try headers.withReset { row throws(StoreError) in
                while try row.step() {
                    streams.messagesAfterMarks.append(MessageHeader(channelID: row.text(0), seq: row.int64(1), senderID: row.text(2),
                                                                    hiddenFrom: row.optionalText(3), deleted: row.bool(4)))
                }
            }
        }
        // The viewer of a last message hidden from everyone but its sender is `*`, and its
        // entry the newest message not hidden from everyone.
        for newest in streams.lastMessages {
            guard let viewer = newest.hiddenFrom else { continue }
            let statement = try connection.statement("""
                SELECT \(RowMapping.messageColumns) FROM messages
                WHERE \(visible) AND seq < ?3 ORDER BY seq DESC LIMIT 1
                """)
            try statement.bind(newest.channelID, at: 1)
            try statement.bind(viewer, at: 2)
            try statement.bind(newest.seq, at: 3)
            let visible = try statement.withReset { row throws(StoreError) in try row.step() ? RowMapping.message(from: row) : nil }
            if let visible { streams.lastVisible.append((viewer: viewer, message: visible)) }
        }
        return streams
    }

    private static func rows<T>(on connection: SQLiteConnection, _ sql: String,
                                _ map: (SQLiteStatement) throws(StoreError) -> T) throws(StoreError) -> [T] {
        let statement = try connection.prepare(sql)
        var result: [T] = []
        while try statement.step() { result.append(try map(statement)) }
        return result
    }
}

private extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while text.first == " " { text.removeFirst() }
        while text.last == " " { text.removeLast() }
        return text
    }
}
