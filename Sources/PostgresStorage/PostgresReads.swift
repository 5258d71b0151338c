import ChatCore
import Foundation
import Logging
import PostgresNIO
import Storage

/// The read-side SQL of the PostgreSQL backend: history pages, idempotency
/// lookups and the start-up snapshot (the same answers as `SQLiteStorage/ReadQueries`).
enum PostgresReads {
    static func history(_ connection: PostgresConnection, channelID: ChannelID, viewer: UserID, beforeSeq: Int64?,
                        afterSeq: Int64?, limit: Int, thread: Int64? = nil, logger: Logger) async throws -> [Message] {
        guard limit > 0 else { return [] }
        let columns = PostgresRows.messageColumns
        let query: PostgresQuery
        let newestFirst: Bool
        // A NULL thread matches every message of the channel.
        switch (beforeSeq, afterSeq) {
        case (nil, nil):
            query = """
                SELECT \(unescaped: columns) FROM messages WHERE channel_id = \(channelID)
                AND \(visibleTo: viewer) AND (\(thread)::bigint IS NULL OR parent_seq = \(thread))
                ORDER BY seq DESC LIMIT \(limit)
                """
            newestFirst = true
        case (let before?, nil):
            query = """
                SELECT \(unescaped: columns) FROM messages WHERE channel_id = \(channelID)
                AND \(visibleTo: viewer) AND (\(thread)::bigint IS NULL OR parent_seq = \(thread))
                AND seq < \(before) ORDER BY seq DESC LIMIT \(limit)
                """
            newestFirst = true
        case (nil, let after?):
            query = """
                SELECT \(unescaped: columns) FROM messages WHERE channel_id = \(channelID)
                AND \(visibleTo: viewer) AND (\(thread)::bigint IS NULL OR parent_seq = \(thread))
                AND seq > \(after) ORDER BY seq ASC LIMIT \(limit)
                """
            newestFirst = false
        case (let before?, let after?):
            query = """
                SELECT \(unescaped: columns) FROM messages WHERE channel_id = \(channelID)
                AND \(visibleTo: viewer) AND (\(thread)::bigint IS NULL OR parent_seq = \(thread))
                AND seq > \(after) AND seq < \(before) ORDER BY seq ASC LIMIT \(limit)
                """
            newestFirst = false
        }
        var messages = try await PostgresRows.messages(try await connection.query(query, logger: logger))
        if newestFirst { messages.reverse() }
        return messages
    }

    static func changes(_ connection: PostgresConnection, channelID: ChannelID, viewer: UserID, afterVersion: Int64,
                        limit: Int, logger: Logger) async throws -> [Message] {
        guard limit > 0 else { return [] }
        let columns = PostgresRows.messageColumns
        // As the SQLite store's `changes`: messages created since and unchanged, a run of seqs
        // found by a binary search over seq, merged with those changed since creation (the
        // partial index on version). "Unchanged" is written `version <= created_version`
        // (never less: created_version ≤ version), which the planner estimates as a third of
        // the rows, not the 0.5 % it guesses for an equality of two columns: with that guess
        // it may read the whole run from its start and sort it (a bitmap scan, seen in a
        // 2,000-message channel) instead of walking the primary key for `limit` rows.
        return try await PostgresRows.messages(try await connection.query("""
            WITH RECURSIVE search(low, high) AS (
                SELECT 1::bigint, LEAST(\(afterVersion)::bigint, COALESCE((SELECT last_seq FROM channels WHERE id = \(channelID)), 0)) + 1
                UNION ALL
                SELECT CASE WHEN m.created_version > \(afterVersion) THEN s.low ELSE (s.low + s.high) / 2 + 1 END,
                       CASE WHEN m.created_version > \(afterVersion) THEN (s.low + s.high) / 2 ELSE s.high END
                FROM search s JOIN messages m ON m.channel_id = \(channelID) AND m.seq = (s.low + s.high) / 2
                WHERE s.low < s.high
            )
            (SELECT \(unescaped: columns) FROM messages WHERE channel_id = \(channelID)
                AND \(visibleTo: viewer) AND seq >= (SELECT max(low) FROM search)
                AND version <= created_version AND version > \(afterVersion) ORDER BY seq ASC LIMIT \(limit))
            UNION ALL
            (SELECT \(unescaped: columns) FROM messages WHERE channel_id = \(channelID)
                AND \(visibleTo: viewer) AND version <> created_version AND version > \(afterVersion)
                ORDER BY version ASC, seq ASC LIMIT \(limit))
            ORDER BY version ASC, seq ASC LIMIT \(limit)
            """, logger: logger))
    }

    static func attributions(_ connection: PostgresConnection, channelID: ChannelID, seqs: ClosedRange<Int64>,
                             users: Set<UserID>, viewer: UserID, logger: Logger) async throws -> MessageAttributions {
        var result = MessageAttributions()
        let userList = users.sorted()
        for try await (seq, user, kind) in try await connection.query("""
            SELECT seq, user_id, kind FROM reactions WHERE channel_id = \(channelID) AND user_id = ANY(\(userList))
            AND seq BETWEEN \(seqs.lowerBound) AND \(seqs.upperBound)
            """, logger: logger).decode((Int64, String, String).self) {
            result.reactions.append(.init(seq: seq, user: user, kind: kind))
        }
        for try await (parent, sender, hiddenFrom, count) in try await connection.query("""
            SELECT parent_seq, sender_id, hidden_from, count(*) FROM messages
            WHERE channel_id = \(channelID) AND parent_seq BETWEEN \(seqs.lowerBound) AND \(seqs.upperBound)
            AND (sender_id = ANY(\(userList)) OR NOT \(visibleTo: viewer))
            GROUP BY parent_seq, sender_id, hidden_from
            """, logger: logger).decode((Int64, String, String?, Int64).self) {
            result.replies.append(.init(parentSeq: parent, tally: ReplyTally(sender: sender, hiddenFrom: hiddenFrom, count: Int(count))))
        }
        return result
    }

    static func messageStates(_ connection: PostgresConnection, channelID: ChannelID, seqs: [Int64],
                              logger: Logger) async throws -> [MessageState] {
        let wanted = Array(Set(seqs)).sorted()
        var states: [Int64: MessageState] = [:]
        for message in try await PostgresRows.messages(try await connection.query("""
            SELECT \(unescaped: PostgresRows.messageColumns) FROM messages WHERE channel_id = \(channelID) AND seq = ANY(\(wanted))
            """, logger: logger)) {
            states[message.seq] = MessageState(message: message)
        }
        for try await (seq, user, kind) in try await connection.query("""
            SELECT seq, user_id, kind FROM reactions WHERE channel_id = \(channelID) AND seq = ANY(\(wanted))
            """, logger: logger).decode((Int64, String, String).self) {
            states[seq]?.reactors[kind, default: []].insert(user)
        }
        for try await (parent, sender, hiddenFrom, count) in try await connection.query("""
            SELECT parent_seq, sender_id, hidden_from, count(*) FROM messages
            WHERE channel_id = \(channelID) AND parent_seq = ANY(\(wanted)) GROUP BY parent_seq, sender_id, hidden_from
            """, logger: logger).decode((Int64, String, String?, Int64).self) {
            states[parent]?.replies.append(ReplyTally(sender: sender, hiddenFrom: hiddenFrom, count: Int(count)))
        }
        return wanted.compactMap { states[$0] }
    }

    static func message(_ connection: PostgresConnection, sender: UserID, clientMessageID: String,
                        logger: Logger) async throws -> Message? {
        try await PostgresRows.messages(try await connection.query("""
            SELECT \(unescaped: PostgresRows.messageColumns) FROM messages
            WHERE sender_id = \(sender) AND client_message_id = \(clientMessageID)
            """, logger: logger)).first
    }

    static func users(_ connection: PostgresConnection, _ ids: [UserID], logger: Logger) async throws -> [User] {
        var users: [User] = []
        for try await row in try await connection.query(
            "SELECT \(unescaped: PostgresRows.userColumns) FROM users WHERE id = ANY(\(Array(Set(ids))))", logger: logger)
            .decode(PostgresRows.UserRow.self) {
            users.append(try PostgresRows.user(row))
        }
        return users
    }

    static func flags(_ connection: PostgresConnection, limit: Int, afterID: Int64?, logger: Logger) async throws -> [Flag] {
        guard limit > 0 else { return [] }
        var flags: [Flag] = []
        for try await row in try await connection.query("""
            SELECT \(unescaped: PostgresRows.flagColumns) FROM flags WHERE id > \(afterID ?? Int64.min)
            ORDER BY id ASC LIMIT \(limit)
            """, logger: logger).decode(PostgresRows.FlagRow.self) {
            flags.append(PostgresRows.flag(row))
        }
        return flags
    }

    /// Everything in one repeatable-read transaction, so the parts agree with each other.
    static func snapshot(_ client: PostgresClient, logger: Logger) async throws -> StoreSnapshot {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
            var snapshot = StoreSnapshot()
            for try await row in try await connection.query(
                "SELECT \(unescaped: PostgresRows.userColumns) FROM users ORDER BY ord", logger: logger)
                .decode(PostgresRows.UserRow.self) {
                snapshot.users.append(try PostgresRows.user(row))
            }
            var membersByChannel: [ChannelID: [UserID]] = [:]
            for try await (channelID, userID) in try await connection.query(
                "SELECT channel_id, user_id FROM channel_members ORDER BY channel_id, position", logger: logger)
                .decode((String, String).self) {
                membersByChannel[channelID, default: []].append(userID)
            }
            for try await row in try await connection.query(
                "SELECT \(unescaped: PostgresRows.channelColumns) FROM channels ORDER BY ord", logger: logger)
                .decode(PostgresRows.ChannelRow.self) {
                var channel = try PostgresRows.channel(row)
                channel.members = membersByChannel[channel.id] ?? []
                snapshot.channels.append(channel)
            }
            for try await (blocker, blocked) in try await connection.query(
                "SELECT blocker, blocked FROM blocks ORDER BY created_at, blocker, blocked", logger: logger)
                .decode((String, String).self) {
                snapshot.blocks.append((blocker: blocker, blocked: blocked))
            }
            snapshot.take(try await Self.streams(connection, of: nil, logger: logger))
            return snapshot
        }
    }

    /// The stored state of `channels`' streams (every channel when nil), as a cluster node
    /// installs it when it starts following them (`ChannelStreams`); in one REPEATABLE READ
    /// snapshot, so the newest messages, marks and headers agree.
    static func streams(_ client: PostgresClient, of channels: [ChannelID], logger: Logger) async throws -> ChannelStreams {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
            return try await Self.streams(connection, of: channels, logger: logger)
        }
    }

    private static func streams(_ connection: PostgresConnection, of channels: [ChannelID]?,
                                logger: Logger) async throws -> ChannelStreams {
        // Every channel, or those named: one array parameter either way.
        let all = channels == nil
        let ids = channels ?? []
        var streams = ChannelStreams(channels: ids)
        // Two texts, not `$1 OR id = ANY($2)`: a generic plan of that would scan every row.
        let versions: PostgresQuery = all
            ? "SELECT id, version FROM channels WHERE version > 0"
            : "SELECT id, version FROM channels WHERE version > 0 AND id = ANY(\(ids))"
        for try await (channelID, version) in try await connection.query(versions, logger: logger)
            .decode((String, Int64).self) {
            streams.versions[channelID] = version
        }
        let lastColumns = PostgresRows.messageColumns.split(separator: ",")
            .map { "m." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
        let newest: PostgresQuery = all ? """
            SELECT \(unescaped: lastColumns) FROM channels c JOIN messages m ON m.channel_id = c.id AND m.seq = c.last_seq
            ORDER BY c.ord
            """ : """
            SELECT \(unescaped: lastColumns) FROM channels c JOIN messages m ON m.channel_id = c.id AND m.seq = c.last_seq
            WHERE c.id = ANY(\(ids))
            ORDER BY c.ord
            """
        streams.lastMessages = try await PostgresRows.messages(try await connection.query(newest, logger: logger))
        // The viewer of a last message hidden from everyone but its sender is `*`, and its
        // entry the newest message not hidden from everyone.
        for last in streams.lastMessages {
            guard let viewer = last.hiddenFrom else { continue }
            let visible = try await PostgresRows.messages(try await connection.query("""
                SELECT \(unescaped: PostgresRows.messageColumns) FROM messages
                WHERE channel_id = \(last.channelID) AND \(visibleTo: viewer) AND seq < \(last.seq)
                ORDER BY seq DESC LIMIT 1
                """, logger: logger)).first
            if let visible { streams.lastVisible.append((viewer: viewer, message: visible)) }
        }
        let marks: PostgresQuery = all
            ? "SELECT channel_id, user_id, last_read_seq FROM read_marks"
            : "SELECT channel_id, user_id, last_read_seq FROM read_marks WHERE channel_id = ANY(\(ids))"
        for try await (channelID, userID, seq) in try await connection.query(marks, logger: logger)
            .decode((String, String, Int64).self) {
            streams.readMarks.append(ReadMark(channelID: channelID, userID: userID, lastReadSeq: seq))
        }
        let headers: PostgresQuery = all ? """
            SELECT m.channel_id, m.seq, m.sender_id, m.hidden_from, m.deleted_at IS NOT NULL
            FROM channels c JOIN messages m ON m.channel_id = c.id
                AND m.seq > GREATEST(c.last_seq - \(StoreSnapshot.unreadWindow),
                    COALESCE((SELECT min(r.last_read_seq) FROM read_marks r WHERE r.channel_id = c.id), c.last_seq))
            ORDER BY m.channel_id, m.seq
            """ : """
            SELECT m.channel_id, m.seq, m.sender_id, m.hidden_from, m.deleted_at IS NOT NULL
            FROM channels c JOIN messages m ON m.channel_id = c.id
                AND m.seq > GREATEST(c.last_seq - \(StoreSnapshot.unreadWindow),
                    COALESCE((SELECT min(r.last_read_seq) FROM read_marks r WHERE r.channel_id = c.id), c.last_seq))
            WHERE c.id = ANY(\(ids))
            ORDER BY m.channel_id, m.seq
            """
        for try await (channelID, seq, senderID, hiddenFrom, deleted) in try await connection.query(headers, logger: logger)
            .decode((String, Int64, String, String?, Bool).self) {
            streams.messagesAfterMarks.append(MessageHeader(channelID: channelID, seq: seq, senderID: senderID,
                                                            hiddenFrom: hiddenFrom, deleted: deleted))
        }
        return streams
    }
}
