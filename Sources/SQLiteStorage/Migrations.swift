import Storage

/// The schema, as an ordered list of migrations kept in code.
///
/// `PRAGMA user_version` holds the number of migrations applied. At open, the
/// missing ones run in order inside one `BEGIN IMMEDIATE` transaction, so a
/// crash mid-migration leaves the previous version intact. Never edit a
/// released migration: append a new one.
enum Migrations {
    static let all: [String] = [
        // 1: initial schema.
        """
        CREATE TABLE users (
            id TEXT PRIMARY KEY NOT NULL,
            name TEXT NOT NULL DEFAULT '',
            image TEXT NOT NULL DEFAULT '',
            metadata TEXT NOT NULL DEFAULT '{}',   -- JSON object of strings
            created_at INTEGER NOT NULL,
            last_seen_at INTEGER NOT NULL DEFAULT 0,
            deactivated INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE channels (
            id TEXT PRIMARY KEY NOT NULL,
            type TEXT NOT NULL CHECK (type IN ('group', 'open')),
            name TEXT NOT NULL DEFAULT '',
            distinct_flag INTEGER NOT NULL DEFAULT 0,
            is_one_to_one INTEGER NOT NULL DEFAULT 0,
            push_from_blocked INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL,
            created_by TEXT NOT NULL,
            last_seq INTEGER NOT NULL DEFAULT 0     -- seq of the channel's newest message
        );
        CREATE TABLE channel_members (
            channel_id TEXT NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
            user_id TEXT NOT NULL,
            position INTEGER NOT NULL,              -- join order
            PRIMARY KEY (channel_id, user_id)
        ) WITHOUT ROWID;
        CREATE INDEX channel_members_by_user ON channel_members(user_id);
        CREATE TABLE messages (
            channel_id TEXT NOT NULL REFERENCES channels(id),
            seq INTEGER NOT NULL CHECK (seq > 0),
            id TEXT NOT NULL UNIQUE,
            sender_id TEXT NOT NULL,
            text TEXT NOT NULL,
            data_json TEXT,
            client_message_id TEXT,
            created_at INTEGER NOT NULL,
            hidden_from TEXT,
            PRIMARY KEY (channel_id, seq)
        ) WITHOUT ROWID;
        CREATE UNIQUE INDEX messages_by_client_id ON messages(sender_id, client_message_id)
            WHERE client_message_id IS NOT NULL;
        CREATE TABLE blocks (
            blocker TEXT NOT NULL,
            blocked TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (blocker, blocked)
        ) WITHOUT ROWID;
        CREATE INDEX blocks_by_blocked ON blocks(blocked);
        """,
        // 2: the member lists shown to inviters whose invitees had blocked them (Channel.inviterViews),
        // as `inviter=member,member;inviter=…` (user ids never hold `=`, `,` or `;`).
        """
        ALTER TABLE channels ADD COLUMN inviter_views TEXT NOT NULL DEFAULT '';
        """,
        // 3: read marks (PROTOCOL.md §14); members from before start with everything read.
        """
        CREATE TABLE read_marks (
            channel_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            last_read_seq INTEGER NOT NULL,
            PRIMARY KEY (channel_id, user_id)
        ) WITHOUT ROWID;
        INSERT INTO read_marks (channel_id, user_id, last_read_seq)
            SELECT m.channel_id, m.user_id, c.last_seq FROM channel_members m JOIN channels c ON c.id = m.channel_id;
        """,
        // 4: the message lifecycle (PROTOCOL.md §15): threads, mentions, edits, tombstones,
        // reactions, and the channel version every change takes. Every message so far took
        // one version, in seq order.
        """
        ALTER TABLE messages ADD COLUMN parent_seq INTEGER;
        ALTER TABLE messages ADD COLUMN mentioned TEXT NOT NULL DEFAULT '[]';   -- JSON array of user ids
        ALTER TABLE messages ADD COLUMN edited_at INTEGER;
        ALTER TABLE messages ADD COLUMN deleted_at INTEGER;
        ALTER TABLE messages ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE messages ADD COLUMN reactions TEXT NOT NULL DEFAULT '{}';   -- JSON object: count per kind
        ALTER TABLE messages ADD COLUMN reply_count INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE channels ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
        UPDATE messages SET version = seq;
        UPDATE channels SET version = last_seq;
        CREATE INDEX messages_by_version ON messages(channel_id, version);
        CREATE INDEX messages_by_parent ON messages(channel_id, parent_seq, seq) WHERE parent_seq IS NOT NULL;
        CREATE TABLE reactions (
            channel_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            user_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (channel_id, seq, user_id, kind)
        ) WITHOUT ROWID;
        CREATE INDEX reactions_by_user ON reactions(channel_id, user_id, seq);
        """,
        // 5: the version a message was created with. Only messages changed since (version
        // <> created_version) are indexed by version: a new message writes no index entry
        // for it, and `message.changes` finds new messages by seq instead, since creation
        // versions rise with seq. Rows from before get the largest creation versions their
        // channel's versions allow (exact for every unchanged message), which keeps both
        // properties `ReadQueries.changes` relies on: created_version ≤ version, rising with seq.
        """
        ALTER TABLE messages ADD COLUMN created_version INTEGER NOT NULL DEFAULT 0;
        UPDATE messages SET created_version = later.bound FROM (
            SELECT channel_id, seq,
                seq + min(version - seq) OVER (PARTITION BY channel_id ORDER BY seq DESC ROWS UNBOUNDED PRECEDING) AS bound
            FROM messages
        ) AS later WHERE messages.channel_id = later.channel_id AND messages.seq = later.seq;
        DROP INDEX messages_by_version;
        CREATE INDEX messages_changed_by_version ON messages(channel_id, version) WHERE version <> created_version;
        """,
        // 6: moderation (PROTOCOL.md §16). The multi-valued fields are JSON text in the shapes
        // `ColumnCoding` writes; the defaults read as before: no roles, not frozen, no slow
        // mode, no bans, no mutes, nobody muted, not banned. Flags take ascending ids that are
        // never reused (AUTOINCREMENT), which the admin API pages by.
        """
        ALTER TABLE channels ADD COLUMN roles TEXT NOT NULL DEFAULT '{}';     -- JSON object: role per user id
        ALTER TABLE channels ADD COLUMN frozen INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE channels ADD COLUMN slow_mode_seconds INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE channels ADD COLUMN bans TEXT NOT NULL DEFAULT '{}';      -- JSON object: {"shadow", "untilMs"} per user id
        ALTER TABLE channels ADD COLUMN mutes TEXT NOT NULL DEFAULT '{}';     -- JSON object: untilMs or null per user id
        ALTER TABLE users ADD COLUMN muted_users TEXT NOT NULL DEFAULT '[]';  -- JSON array of user ids
        ALTER TABLE users ADD COLUMN ban TEXT;                                -- JSON {"shadow", "untilMs"} or NULL: not banned
        CREATE TABLE flags (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            channel_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            message_id TEXT NOT NULL,
            reporter_id TEXT NOT NULL,
            sender_id TEXT NOT NULL,
            reason TEXT NOT NULL,
            created_at INTEGER NOT NULL
        );
        """,
    ]

    /// The schema version this build writes.
    static var latestVersion: Int64 { Int64(all.count) }

    /// Brings the database up to ``latestVersion``.
    static func apply(on connection: SQLiteConnection) throws(StoreError) {
        let current = try connection.integerPragma("user_version")
        if current == latestVersion { return }
        try connection.execute("BEGIN IMMEDIATE")
        do throws(StoreError) {
            // Re-read under the write lock: another process may have migrated meanwhile.
            let version = try connection.integerPragma("user_version")
            guard version <= latestVersion else {
                throw StoreError("database schema version \(version) is newer than this build (\(latestVersion))")
            }
            for index in Int(version)..<all.count {
                try connection.execute(all[index])
            }
            try connection.execute("PRAGMA user_version = \(latestVersion)")
            try connection.execute("COMMIT")
        } catch {
            if !connection.isAutocommit { try? connection.execute("ROLLBACK") }
            throw error
        }
    }
}
