import ChatCore
import PostgresNIO
import Storage

/// Column lists and row → model conversions of the PostgreSQL backend (the SQLite
/// twin is `SQLiteStorage/RowMapping.swift`; the multi-value columns share `ColumnCoding`).
enum PostgresRows {
    static let messageColumns = """
        id, channel_id, seq, sender_id, text, data_json, client_message_id, created_at, hidden_from, \
        parent_seq, mentioned, edited_at, deleted_at, version, reactions, reply_count
        """
    typealias MessageRow = (String, String, Int64, String, String, String?, String?, Int64, String?,
                            Int64?, String, Int64?, Int64?, Int64, String, Int32)

    static func message(_ row: MessageRow) -> Message {
        Message(id: row.0, channelID: row.1, seq: row.2, senderID: row.3, text: row.4, dataJSON: row.5,
                clientMessageID: row.6, createdAt: row.7, hiddenFrom: row.8, parentSeq: row.9,
                mentionedUserIDs: ColumnCoding.decodeList(row.10), editedAt: row.11, deletedAt: row.12, version: row.13,
                reactions: ColumnCoding.decodeCounts(row.14), replyCount: Int(row.15))
    }

    static func messages(_ rows: PostgresRowSequence) async throws -> [Message] {
        var messages: [Message] = []
        for try await row in rows.decode(MessageRow.self) { messages.append(message(row)) }
        return messages
    }

    static let userColumns = "id, name, image, metadata, created_at, last_seen_at, deactivated, muted_users, ban"
    typealias UserRow = (String, String, String, String, Int64, Int64, Bool, String, String?)

    static func user(_ row: UserRow) throws(StoreError) -> User {
        User(id: row.0, name: row.1, image: row.2, metadata: try ColumnCoding.decodeMetadata(row.3, userID: row.0),
             createdAt: row.4, lastSeenAt: row.5, deactivated: row.6, mutedUsers: ColumnCoding.decodeUserSet(row.7),
             ban: ColumnCoding.decodeBan(row.8))
    }

    static let channelColumns = """
        id, type, name, distinct_flag, is_one_to_one, push_from_blocked, created_at, created_by, inviter_views, \
        roles, frozen, slow_mode_seconds, bans, mutes
        """
    typealias ChannelRow = (String, String, String, Bool, Bool, Bool, Int64, String, String, String, Bool, Int32, String, String)

    /// A channel without its members (filled in by the caller).
    static func channel(_ row: ChannelRow) throws(StoreError) -> ChatCore.Channel {
        guard let type = ChannelType(rawValue: row.1) else { throw StoreError("channel \(row.0) has unknown type \(row.1)") }
        return Channel(id: row.0, type: type, name: row.2, members: [], distinct: row.3, isOneToOne: row.4,
                       pushFromBlockedUsers: row.5, createdAt: row.6, createdBy: row.7,
                       inviterViews: ColumnCoding.decodeInviterViews(row.8), roles: ColumnCoding.decodeRoles(row.9),
                       frozen: row.10, slowModeSeconds: Int(row.11), bans: ColumnCoding.decodeBans(row.12),
                       mutes: ColumnCoding.decodeMutes(row.13))
    }

    static let flagColumns = "id, channel_id, seq, message_id, reporter_id, sender_id, reason, created_at"
    typealias FlagRow = (Int64, String, Int64, String, String, String, String, Int64)

    static func flag(_ row: FlagRow) -> Flag {
        Flag(id: row.0, channelID: row.1, seq: row.2, messageID: row.3, reporterID: row.4, senderID: row.5, reason: row.6,
             createdAt: row.7)
    }
}

extension PostgresQuery.StringInterpolation {
    /// Whether `viewer` may read a message row: it is not stored hidden from the viewer (§5),
    /// nor hidden from everyone but its sender (§16, `*`; no user id can be `*`), as
    /// `Message.isHidden(from:)` says. A filter on the rows the scan reads, so a page's
    /// `LIMIT` counts only rows the viewer sees. Binds `viewer` twice.
    mutating func appendInterpolation(visibleTo viewer: UserID) {
        appendLiteral("(hidden_from IS NULL OR (hidden_from <> ")
        appendInterpolation(viewer)
        appendLiteral(" AND (hidden_from <> '\(Message.hiddenFromEveryone)' OR sender_id = ")
        appendInterpolation(viewer)
        appendLiteral(")))")
    }
}
