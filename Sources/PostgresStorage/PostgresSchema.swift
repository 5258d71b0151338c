import Logging
import PostgresNIO
import Storage

/// The PostgreSQL schema as ordered migrations kept in code, the same tables and
/// meaning as the SQLite schema (`SQLiteStorage/Migrations.swift`).
///
/// `chat_schema.version` holds the number applied. Nodes that start together
/// migrate one at a time: the migration transaction takes an advisory lock first,
/// then re-reads the version. Never edit a released migration: append one.
enum PostgresSchema {
    static let migrations: [String] = [
        // 1: initial schema. `ord` keeps insertion order (SQLite's rowid) for the start-up snapshot.
        """
        CREATE TABLE users (
            id text PRIMARY KEY,
            name text NOT NULL DEFAULT '',
            image text NOT NULL DEFAULT '',
            metadata text NOT NULL DEFAULT '{}',
            created_at bigint NOT NULL,
            last_seen_at bigint NOT NULL DEFAULT 0,
            deactivated boolean NOT NULL DEFAULT false,
            ord bigint GENERATED ALWAYS AS IDENTITY
        );
        CREATE TABLE channels (
            id text PRIMARY KEY,
            type text NOT NULL CHECK (type IN ('group', 'open')),
            name text NOT NULL DEFAULT '',
            distinct_flag boolean NOT NULL DEFAULT false,
            is_one_to_one boolean NOT NULL DEFAULT false,
            push_from_blocked boolean NOT NULL DEFAULT false,
            created_at bigint NOT NULL,
            created_by text NOT NULL,
            inviter_views text NOT NULL DEFAULT '',
            last_seq bigint NOT NULL DEFAULT 0,
            ord bigint GENERATED ALWAYS AS IDENTITY
        );
        CREATE TABLE channel_members (
            channel_id text NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
            user_id text NOT NULL,
            position integer NOT NULL,
            PRIMARY KEY (channel_id, user_id)
        );
        CREATE INDEX channel_members_by_user ON channel_members(user_id);
        CREATE TABLE messages (
            channel_id text NOT NULL REFERENCES channels(id),
            seq bigint NOT NULL CHECK (seq > 0),
            id text NOT NULL UNIQUE,
            sender_id text NOT NULL,
            text text NOT NULL,
            data_json text,
            client_message_id text,
            created_at bigint NOT NULL,
            hidden_from text,
            PRIMARY KEY (channel_id, seq)
        );
        CREATE UNIQUE INDEX messages_by_client_id ON messages(sender_id, client_message_id)
            WHERE client_message_id IS NOT NULL;
        CREATE TABLE blocks (
            blocker text NOT NULL,
            blocked text NOT NULL,
            created_at bigint NOT NULL,
            PRIMARY KEY (blocker, blocked)
        );
        CREATE INDEX blocks_by_blocked ON blocks(blocked);
        """,
        // 2: read marks (PROTOCOL.md §14); members from before start with everything read.
        """
        CREATE TABLE read_marks (
            channel_id text NOT NULL,
            user_id text NOT NULL,
            last_read_seq bigint NOT NULL,
            PRIMARY KEY (channel_id, user_id)
        );
        INSERT INTO read_marks (channel_id, user_id, last_read_seq)
            SELECT m.channel_id, m.user_id, c.last_seq FROM channel_members m JOIN channels c ON c.id = m.channel_id;
        """,
        // 3: no foreign key from messages to channels. Its check ran once per inserted row
        // (a trigger and a `FOR KEY SHARE` lookup of the channel row); the writer already
        // holds that row `FOR UPDATE` in the same transaction and refuses a message whose
        // channel it did not find, and channels are never deleted.
        """
        ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_channel_id_fkey
        """,
        // 4: the message lifecycle (PROTOCOL.md §15): threads, mentions, edits, tombstones,
        // reactions, and the channel version every change takes. Every message so far took
        // one version, in seq order.
        """
        ALTER TABLE messages ADD COLUMN parent_seq bigint;
        ALTER TABLE messages ADD COLUMN mentioned text NOT NULL DEFAULT '[]';
        ALTER TABLE messages ADD COLUMN edited_at bigint;
        ALTER TABLE messages ADD COLUMN deleted_at bigint;
        ALTER TABLE messages ADD COLUMN version bigint NOT NULL DEFAULT 0;
        ALTER TABLE messages ADD COLUMN reactions text NOT NULL DEFAULT '{}';
        ALTER TABLE messages ADD COLUMN reply_count integer NOT NULL DEFAULT 0;
        ALTER TABLE channels ADD COLUMN version bigint NOT NULL DEFAULT 0;
        UPDATE messages SET version = seq;
        UPDATE channels SET version = last_seq;
        CREATE INDEX messages_by_version ON messages(channel_id, version);
        CREATE INDEX messages_by_parent ON messages(channel_id, parent_seq, seq) WHERE parent_seq IS NOT NULL;
        CREATE TABLE reactions (
            channel_id text NOT NULL,
            seq bigint NOT NULL,
            user_id text NOT NULL,
            kind text NOT NULL,
            created_at bigint NOT NULL,
            PRIMARY KEY (channel_id, seq, user_id, kind)
        );
        CREATE INDEX reactions_by_user ON reactions(channel_id, user_id, seq)
        """,
        // 5: the version a message was created with; only messages changed since are
        // indexed by version (see the SQLite store's migration 5 for the reasoning).
        """
        ALTER TABLE messages ADD COLUMN created_version bigint NOT NULL DEFAULT 0;
        UPDATE messages m SET created_version = later.bound FROM (
            SELECT channel_id, seq,
                seq + min(version - seq) OVER (PARTITION BY channel_id ORDER BY seq DESC ROWS UNBOUNDED PRECEDING) AS bound
            FROM messages
        ) AS later WHERE m.channel_id = later.channel_id AND m.seq = later.seq;
        DROP INDEX messages_by_version;
        CREATE INDEX messages_changed_by_version ON messages(channel_id, version) WHERE version <> created_version
        """,
        // 6: moderation (PROTOCOL.md §16), as the SQLite store's migration 6: the multi-valued
        // fields as JSON text in the shapes `ColumnCoding` writes, defaults that read as before
        // (no roles, not frozen, no slow mode, no bans, no mutes, nobody muted, not banned),
        // and the flags the admin API pages by id. The batch takes an advisory lock before it
        // draws a flag id (`PostgresBatch`), so ids also rise in commit order across nodes.
        """
        ALTER TABLE channels ADD COLUMN roles text NOT NULL DEFAULT '{}';
        ALTER TABLE channels ADD COLUMN frozen boolean NOT NULL DEFAULT false;
        ALTER TABLE channels ADD COLUMN slow_mode_seconds integer NOT NULL DEFAULT 0;
        ALTER TABLE channels ADD COLUMN bans text NOT NULL DEFAULT '{}';
        ALTER TABLE channels ADD COLUMN mutes text NOT NULL DEFAULT '{}';
        ALTER TABLE users ADD COLUMN muted_users text NOT NULL DEFAULT '[]';
        ALTER TABLE users ADD COLUMN ban text;
        CREATE TABLE flags (
            id bigserial PRIMARY KEY,
            channel_id text NOT NULL,
            seq bigint NOT NULL,
            message_id text NOT NULL,
            reporter_id text NOT NULL,
            sender_id text NOT NULL,
            reason text NOT NULL,
            created_at bigint NOT NULL
        )
        """,
    ]

    /// An arbitrary constant: the advisory lock every node takes to migrate.
    private static let lockKey: Int64 = 0x6368_6174_6777  // "chatgw"

    /// Brings the database up to the newest migration.
    static func migrate(_ client: PostgresClient, logger: Logger) async throws {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS chat_schema (version integer NOT NULL)", logger: logger)
            var version = 0
            for try await (value) in try await connection.query("SELECT version FROM chat_schema", logger: logger)
                .decode(Int.self) { version = value }
            guard version <= migrations.count else {
                throw StoreError("database schema version \(version) is newer than this build (\(migrations.count))")
            }
            if version == migrations.count { return }
            for migration in migrations[version...] {
                // The extended query protocol takes one statement at a time.
                for statement in migration.split(separator: ";") where !statement.allSatisfy(\.isWhitespace) {
                    try await connection.query(PostgresQuery(unsafeSQL: String(statement)), logger: logger)
                }
            }
            try await connection.query("DELETE FROM chat_schema", logger: logger)
            try await connection.query("INSERT INTO chat_schema (version) VALUES (\(migrations.count))", logger: logger)
        }
    }
}
