import ChatCore
import Foundation
import Storage

/// Column lists and row ⇄ model conversions shared by the reader and the writer.
enum RowMapping {
    /// Column list of every message query, in the order `message(from:)` reads.
    static let messageColumns = """
        id, channel_id, seq, sender_id, text, data_json, client_message_id, created_at, hidden_from, \
        parent_seq, mentioned, edited_at, deleted_at, version, reactions, reply_count
        """

    static func message(from row: SQLiteStatement, offset: Int32 = 0) -> Message {
        Message(
            id: row.text(offset),
            channelID: row.text(offset + 1),
            seq: row.int64(offset + 2),
            senderID: row.text(offset + 3),
            text: row.text(offset + 4),
            dataJSON: row.optionalText(offset + 5),
            clientMessageID: row.optionalText(offset + 6),
            createdAt: row.int64(offset + 7),
            hiddenFrom: row.optionalText(offset + 8),
            parentSeq: row.isNull(offset + 9) ? nil : row.int64(offset + 9),
            mentionedUserIDs: ColumnCoding.decodeList(row.text(offset + 10)),
            editedAt: row.isNull(offset + 11) ? nil : row.int64(offset + 11),
            deletedAt: row.isNull(offset + 12) ? nil : row.int64(offset + 12),
            version: row.int64(offset + 13),
            reactions: ColumnCoding.decodeCounts(row.text(offset + 14)),
            replyCount: Int(truncatingIfNeeded: row.int64(offset + 15))
        )
    }

    static let userColumns = "id, name, image, metadata, created_at, last_seen_at, deactivated, muted_users, ban"

    static func user(from row: SQLiteStatement) throws(StoreError) -> User {
        let id = row.text(0)
        return User(
            id: id,
            name: row.text(1),
            image: row.text(2),
            metadata: try ColumnCoding.decodeMetadata(row.text(3), userID: id),
            createdAt: row.int64(4),
            lastSeenAt: row.int64(5),
            deactivated: row.bool(6),
            mutedUsers: ColumnCoding.decodeUserSet(row.text(7)),
            ban: ColumnCoding.decodeBan(row.optionalText(8))
        )
    }

    static let channelColumns = """
        id, type, name, distinct_flag, is_one_to_one, push_from_blocked, created_at, created_by, inviter_views, \
        roles, frozen, slow_mode_seconds, bans, mutes
        """

    /// A channel without its members (filled in by the caller).
    static func channel(from row: SQLiteStatement) throws(StoreError) -> Channel {
        let id = row.text(0)
        let typeName = row.text(1)
        guard let type = ChannelType(rawValue: typeName) else {
            throw StoreError("channel \(id) has unknown type \(typeName)")
        }
        return Channel(
            id: id, type: type, name: row.text(2), members: [],
            distinct: row.bool(3), isOneToOne: row.bool(4), pushFromBlockedUsers: row.bool(5),
            createdAt: row.int64(6), createdBy: row.text(7), inviterViews: ColumnCoding.decodeInviterViews(row.text(8)),
            roles: ColumnCoding.decodeRoles(row.text(9)), frozen: row.bool(10),
            slowModeSeconds: Int(truncatingIfNeeded: row.int64(11)), bans: ColumnCoding.decodeBans(row.text(12)),
            mutes: ColumnCoding.decodeMutes(row.text(13))
        )
    }

    static let flagColumns = "id, channel_id, seq, message_id, reporter_id, sender_id, reason, created_at"

    static func flag(from row: SQLiteStatement) -> Flag {
        Flag(id: row.int64(0), channelID: row.text(1), seq: row.int64(2), messageID: row.text(3), reporterID: row.text(4),
             senderID: row.text(5), reason: row.text(6), createdAt: row.int64(7))
    }
}
