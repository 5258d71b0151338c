import ChatCore
import Logging
import PostgresNIO
import Storage

/// Applies one group commit's writes, in enqueue order, inside the caller's open
/// transaction on `connection`.
///
/// Consecutive message inserts (flush barriers between them do not count) go as one
/// run: a lookup of their `clientMessageId`s already stored (retries, from any node),
/// the channel rows locked in id order (`FOR UPDATE`: one channel's `seq` is
/// serialised across nodes, and two nodes never deadlock on the order), the `seq`s
/// assigned from the locked `last_seq`, and one statement that updates the counters
/// and inserts every message. Each new message is judged against its channel as
/// committed (§16, `SendAdmission`): the moderation fields come with the locked rows,
/// and one statement after the lock reads, per distinct (channel, sender), whether the
/// sender is a member and its app-wide ban. Four round trips however many messages the
/// run holds, five when one of its channels is 1-to-1 (the block rows decide what is
/// hidden).
///
/// The other writes run one statement group each; those that can be refused on
/// their own (an unknown channel or user, a channel id taken) run inside a
/// savepoint so that only their own result is a failure. A server error elsewhere
/// (a `clientMessageId` stored by another node between the lookup and the insert,
/// a lost connection) throws: the caller rolls the batch back and retries or fails it.
///
/// Flags (§16) run last, after an advisory lock held until the transaction ends: no
/// other transaction draws a flag id until this one has committed or rolled back, so
/// flag ids rise in commit order across nodes and a reader paging after an id never
/// misses one committed later. It is the last lock a batch takes, so a batch holding it
/// never waits for another.
struct PostgresBatch {
    let connection: PostgresConnection
    let logger: Logger
    /// PROTOCOL.md §5 strict mode: a 1-to-1 message is also hidden from a recipient the
    /// sender blocked.
    var strictBlocking = false
    /// Channels locked with this batch's own, though it may write none of them: those of
    /// the batch committing before it on another connection (`PostgresGroupCommitWriter`),
    /// so that its `FOR UPDATE` returns only once that transaction has ended.
    var alsoLock: [ChannelID] = []
    /// Told the channels whose rows a message run has just locked (empty when the run
    /// had no new message to store), before the run writes anything.
    var channelsLocked: (@Sendable ([ChannelID]) -> Void)?

    private struct ClientKey: Hashable {
        var sender: UserID
        var clientMessageID: String
    }

    /// Messages of this batch by (sender, clientMessageId): a second send of one
    /// key in the same batch answers with the first.
    private var storedByClientID: [ClientKey: Message] = [:]

    init(connection: PostgresConnection, logger: Logger, strictBlocking: Bool = false) {
        self.connection = connection
        self.logger = logger
        self.strictBlocking = strictBlocking
    }

    mutating func apply(_ writes: [StoreWrite?]) async throws -> [Result<StoreWriteResult, StoreError>] {
        var results = [Result<StoreWriteResult, StoreError>](repeating: .success(.done), count: writes.count)
        var flags: [(index: Int, flag: Flag)] = []
        var index = 0
        while index < writes.count {
            guard let write = writes[index] else {
                index += 1  // a flush barrier
                continue
            }
            if case .insertFlag(let flag) = write {
                flags.append((index, flag))
                index += 1
            } else if case .insertMessage = write {
                var run: [(index: Int, message: Message)] = []
                while index < writes.count {
                    if case .insertMessage(let message)? = writes[index] {
                        run.append((index, message))
                    } else if writes[index] != nil {
                        break
                    }
                    index += 1
                }
                for (at, result) in try await insert(run) { results[at] = result }
            } else {
                results[index] = try await applyAlone(write)
                index += 1
            }
        }
        if !flags.isEmpty {
            let stored = try await insert(flags.map(\.flag))
            for (at, flag) in zip(flags.map(\.index), stored) { results[at] = .success(.flag(flag)) }
        }
        return results
    }

    /// `apply`, each write in a savepoint of its own: a write the server refuses fails
    /// alone and the others commit. For the retry of a batch the server refused as a whole,
    /// so that no write fails because of another's (an invalid byte in one message, say).
    /// Flags run last here too, for the lock order `apply` keeps.
    mutating func applyEach(_ writes: [StoreWrite?]) async throws -> [Result<StoreWriteResult, StoreError>] {
        var results = [Result<StoreWriteResult, StoreError>](repeating: .success(.done), count: writes.count)
        let isFlag = writes.map { write in if case .insertFlag? = write { true } else { false } }
        let order = writes.indices.filter { !isFlag[$0] } + writes.indices.filter { isFlag[$0] }
        for index in order {
            guard let write = writes[index] else { continue }
            try await connection.query("SAVEPOINT each_write", logger: logger)
            do {
                let result = try await apply([write]).first ?? .success(.done)
                try await connection.query("RELEASE SAVEPOINT each_write", logger: logger)
                results[index] = result
            } catch let error as PSQLError where error.code == .server {
                try await connection.query("ROLLBACK TO SAVEPOINT each_write", logger: logger)
                results[index] = .failure(StoreError(PostgresErrors.describe(error)))
            }
        }
        return results
    }

    // MARK: flags

    /// The advisory lock flag ids are drawn under (another key than the migration's).
    static let flagLockKey: Int64 = 0x6368_6174_666C  // "chatfl"

    /// Stores `flags` in order, under the flag lock, each with the next id.
    private func insert(_ flags: [Flag]) async throws -> [Flag] {
        try await connection.query("SELECT pg_advisory_xact_lock(\(Self.flagLockKey))", logger: logger)
        var stored: [Flag] = []
        stored.reserveCapacity(flags.count)
        for flag in flags {
            var id: Int64?
            for try await value in try await connection.query("""
                INSERT INTO flags (channel_id, seq, message_id, reporter_id, sender_id, reason, created_at)
                VALUES (\(flag.channelID), \(flag.seq), \(flag.messageID), \(flag.reporterID), \(flag.senderID),
                    \(flag.reason), \(flag.createdAt))
                RETURNING id
                """, logger: logger).decode(Int64.self) { id = value }
            guard let id else { throw StoreError("insertFlag: no id returned") }
            var flag = flag
            flag.id = id
            stored.append(flag)
        }
        return stored
    }

    // MARK: messages

    private mutating func insert(_ run: [(index: Int, message: Message)]) async throws
        -> [(Int, Result<StoreWriteResult, StoreError>)]
    {
        var results: [(Int, Result<StoreWriteResult, StoreError>)] = []
        results.reserveCapacity(run.count)
        let stored = try await alreadyStored(run.map(\.message))
        var fresh: [(index: Int, message: Message)] = []
        /// Sends in this run repeating a key first seen in this run: index → the first's position in `fresh`.
        var repeats: [(index: Int, of: Int)] = []
        var freshByKey: [ClientKey: Int] = [:]
        for (index, message) in run {
            guard let clientMessageID = message.clientMessageID else {
                fresh.append((index, message))
                continue
            }
            let key = ClientKey(sender: message.senderID, clientMessageID: clientMessageID)
            if let existing = storedByClientID[key] ?? stored[key] {
                results.append((index, .success(.existingMessage(existing))))
            } else if let first = freshByKey[key] {
                repeats.append((index, first))
            } else {
                freshByKey[key] = fresh.count
                fresh.append((index, message))
            }
        }
        guard !fresh.isEmpty else {
            channelsLocked?([])
            return results
        }

        var lastSeq: [ChannelID: Int64] = [:]
        var lastVersion: [ChannelID: Int64] = [:]
        var oneToOne: Set<ChannelID> = []
        var admissions: [ChannelID: SendAdmission] = [:]
        let channelIDs = Array(Set(fresh.map(\.message.channelID))).sorted()
        let locking = Array(Set(channelIDs).union(alsoLock)).sorted()
        // The moderation fields are read with the lock: as the last transaction to write the
        // row left them, this batch's own earlier writes included. The roles matter only in
        // a frozen channel.
        for try await (id, seq, version, isOneToOne, createdBy, frozen, roles, bans) in try await connection.query("""
            SELECT id, last_seq, version, is_one_to_one, created_by, frozen, CASE WHEN frozen THEN roles ELSE '{}' END, bans
            FROM channels WHERE id = ANY(\(locking)) ORDER BY id FOR UPDATE
            """, logger: logger).decode((String, Int64, Int64, Bool, String, Bool, String, String).self) {
            lastSeq[id] = seq
            lastVersion[id] = version
            if isOneToOne { oneToOne.insert(id) }
            admissions[id] = SendAdmission(channelID: id, createdBy: createdBy, frozen: frozen, rolesJSON: roles, bansJSON: bans)
        }
        channelsLocked?(channelIDs)
        let senders = try await sendersAsCommitted(fresh.map(\.message).filter { lastSeq[$0.channelID] != nil })
        let parents = try await threadParents(of: fresh.map(\.message))
        let hiddenFrom = oneToOne.isDisjoint(with: channelIDs)
            ? [:] : try await hiddenOneToOneRecipients(of: fresh.map(\.message).filter { oneToOne.contains($0.channelID) })
        var inserted: [Message] = []
        var outcome = [Result<StoreWriteResult, StoreError>?](repeating: nil, count: fresh.count)
        for (position, (_, message)) in fresh.enumerated() {
            guard let last = lastSeq[message.channelID], let admission = admissions[message.channelID] else {
                outcome[position] = .failure(StoreError("insertMessage: unknown channel \(message.channelID)"))
                continue
            }
            let sender = senders[SenderKey(channel: message.channelID, user: message.senderID)]
            let verdict = admission.verdict(on: message, senderIsMember: sender?.isMember ?? false, userBan: sender?.ban)
            if case .refuse(let refusal) = verdict {
                outcome[position] = .success(.refused(refusal))
                continue
            }
            if let parentSeq = message.parentSeq, parents[ParentKey(channel: message.channelID, seq: parentSeq)] != true {
                // No such message, or a reply: a reply cannot be a parent (§15).
                outcome[position] = .success(.refused(.messageNotFound))
                continue
            }
            var message = message
            message.seq = last + 1
            message.version = (lastVersion[message.channelID] ?? 0) + 1
            message.reactions = [:]
            message.replyCount = 0
            lastVersion[message.channelID] = message.version
            if message.hiddenFrom == nil, let recipient = hiddenFrom[message.channelID]?[message.senderID] {
                message.hiddenFrom = recipient
            }
            if verdict == .store(hiddenFromEveryone: true) { message.hiddenFrom = Message.hiddenFromEveryone }
            lastSeq[message.channelID] = message.seq
            inserted.append(message)
            outcome[position] = .success(.message(message))
            if let clientMessageID = message.clientMessageID {
                storedByClientID[ClientKey(sender: message.senderID, clientMessageID: clientMessageID)] = message
            }
        }
        if !inserted.isEmpty {
            try await connection.query(Self.insertQuery(inserted, lastSeq: lastSeq, lastVersion: lastVersion), logger: logger)
            let replies = inserted.filter { $0.parentSeq != nil }
            if !replies.isEmpty { try await connection.query(Self.countRepliesQuery(replies), logger: logger) }
        }
        for (position, (index, _)) in fresh.enumerated() {
            results.append((index, outcome[position] ?? .failure(StoreError("insertMessage: not applied"))))
        }
        for (index, first) in repeats {
            let repeated: Result<StoreWriteResult, StoreError>
            switch outcome[first] {
            case .success(.message(let stored))?: repeated = .success(.existingMessage(stored))
            case let other?: repeated = other
            case nil: repeated = .failure(StoreError("insertMessage: not applied"))
            }
            results.append((index, repeated))
        }
        return results
    }

    private struct SenderKey: Hashable {
        var channel: ChannelID
        var user: UserID
    }

    /// For each distinct (channel, sender) of `messages`: whether the sender is a member of
    /// the channel and its app-wide ban, as committed. Read after the channel rows are
    /// locked, in a statement of its own: its snapshot holds the members that the last
    /// transaction to write those rows left (the locking statement's snapshot predates
    /// its wait for the lock).
    private func sendersAsCommitted(_ messages: [Message]) async throws -> [SenderKey: (isMember: Bool, ban: Ban?)] {
        let keys = Array(Set(messages.map { SenderKey(channel: $0.channelID, user: $0.senderID) }))
        guard !keys.isEmpty else { return [:] }
        let channels = keys.map(\.channel), users = keys.map(\.user)
        var senders: [SenderKey: (isMember: Bool, ban: Ban?)] = [:]
        for try await (channel, user, isMember, ban) in try await connection.query("""
            SELECT p.channel_id, p.user_id,
                EXISTS (SELECT 1 FROM channel_members m WHERE m.channel_id = p.channel_id AND m.user_id = p.user_id), u.ban
            FROM unnest(\(channels)::text[], \(users)::text[]) AS p(channel_id, user_id)
            LEFT JOIN users u ON u.id = p.user_id
            """, logger: logger).decode((String, String, Bool, String?).self) {
            senders[SenderKey(channel: channel, user: user)] = (isMember, ColumnCoding.decodeBan(ban))
        }
        return senders
    }

    private struct ParentKey: Hashable {
        var channel: ChannelID
        var seq: Int64
    }

    /// For the replies among `messages`: whether each parent exists and may be one (is not
    /// itself a reply). Read after the channel rows are locked: parents are never removed.
    private func threadParents(of messages: [Message]) async throws -> [ParentKey: Bool] {
        let replies = messages.filter { $0.parentSeq != nil }
        guard !replies.isEmpty else { return [:] }
        let channels = replies.map(\.channelID), seqs = replies.map { $0.parentSeq ?? 0 }
        var parents: [ParentKey: Bool] = [:]
        for try await (channel, seq, isTopLevel) in try await connection.query("""
            SELECT m.channel_id, m.seq, m.parent_seq IS NULL FROM messages m
            JOIN unnest(\(channels)::text[], \(seqs)::bigint[]) AS p(channel_id, seq) ON m.channel_id = p.channel_id AND m.seq = p.seq
            """, logger: logger).decode((String, Int64, Bool).self) {
            parents[ParentKey(channel: channel, seq: seq)] = isTopLevel
        }
        return parents
    }

    /// Each parent of `replies` counts them and takes the newest one's version (§15).
    private static func countRepliesQuery(_ replies: [Message]) -> PostgresQuery {
        var counts: [ParentKey: (count: Int64, version: Int64)] = [:]
        for reply in replies {
            let key = ParentKey(channel: reply.channelID, seq: reply.parentSeq ?? 0)
            let old = counts[key] ?? (0, 0)
            counts[key] = (old.count + 1, max(old.version, reply.version))
        }
        let keys = counts.keys.sorted { ($0.channel, $0.seq) < ($1.channel, $1.seq) }
        let channels = keys.map(\.channel), seqs = keys.map(\.seq)
        let added = keys.map { counts[$0]?.count ?? 0 }, versions = keys.map { counts[$0]?.version ?? 0 }
        return """
            UPDATE messages m SET reply_count = m.reply_count + v.added, version = v.version
            FROM unnest(\(channels)::text[], \(seqs)::bigint[], \(added)::bigint[], \(versions)::bigint[])
                AS v(channel_id, seq, added, version)
            WHERE m.channel_id = v.channel_id AND m.seq = v.seq
            """
    }

    /// For the 1-to-1 channels among `messages`: per channel, per sender, the recipient its
    /// messages must be stored hidden from (§5), read from the block rows in this transaction.
    /// The node storing it may not have heard of a block another node committed a moment
    /// earlier; the database has it (the block's reply came after its commit).
    private func hiddenOneToOneRecipients(of messages: [Message]) async throws -> [ChannelID: [UserID: UserID]] {
        let channelIDs = Array(Set(messages.map(\.channelID))).sorted()
        var members: [ChannelID: [UserID]] = [:]
        for try await (channel, user) in try await connection.query("""
            SELECT m.channel_id, m.user_id FROM channel_members m JOIN channels c ON c.id = m.channel_id
            WHERE c.is_one_to_one AND m.channel_id = ANY(\(channelIDs))
            """, logger: logger).decode((String, String).self) {
            members[channel, default: []].append(user)
        }
        guard !members.isEmpty else { return [:] }
        var senders: [String] = [], recipients: [String] = []
        for message in messages {
            guard let pair = members[message.channelID], let other = pair.first(where: { $0 != message.senderID }) else { continue }
            senders.append(message.senderID)
            recipients.append(other)
        }
        guard !senders.isEmpty else { return [:] }
        var hidden: [ChannelID: [UserID: UserID]] = [:]
        let strict = strictBlocking
        for try await (blocker, blocked) in try await connection.query("""
            SELECT b.blocker, b.blocked FROM blocks b
            JOIN unnest(\(senders)::text[], \(recipients)::text[]) AS p(sender, recipient)
              ON (b.blocker = p.recipient AND b.blocked = p.sender)
              OR (\(strict) AND b.blocker = p.sender AND b.blocked = p.recipient)
            """, logger: logger).decode((String, String).self) {
            for (channel, pair) in members where pair.contains(blocker) && pair.contains(blocked) {
                // A message from the blocked user is hidden from the blocker; in strict mode
                // also one from the blocker to the user they blocked.
                hidden[channel, default: [:]][blocked] = blocker
                if strict { hidden[channel, default: [:]][blocker] = blocked }
            }
        }
        return hidden
    }

    /// Messages already stored under the run's (sender, clientMessageId) keys.
    private func alreadyStored(_ messages: [Message]) async throws -> [ClientKey: Message] {
        let keyed = messages.filter { $0.clientMessageID != nil }
        guard !keyed.isEmpty else { return [:] }
        let senders = keyed.map(\.senderID)
        let clientIDs = keyed.map { $0.clientMessageID ?? "" }
        var found: [ClientKey: Message] = [:]
        for message in try await PostgresRows.messages(try await connection.query("""
            SELECT \(unescaped: PostgresRows.messageColumns) FROM messages
            WHERE (sender_id, client_message_id) IN (SELECT * FROM unnest(\(senders)::text[], \(clientIDs)::text[]))
            """, logger: logger)) {
            found[ClientKey(sender: message.senderID, clientMessageID: message.clientMessageID ?? "")] = message
        }
        return found
    }

    /// One statement: the counters of the channels written set to their last `seq`, and
    /// one multi-row insert. The optional columns go as a value array and a null-flag
    /// array (postgres-nio binds arrays of non-optional elements).
    private static func insertQuery(_ messages: [Message], lastSeq: [ChannelID: Int64],
                                    lastVersion: [ChannelID: Int64]) -> PostgresQuery {
        let advanced = Set(messages.map(\.channelID)).sorted()
        let counters = advanced.map { lastSeq[$0] ?? 0 }
        let versionCounters = advanced.map { lastVersion[$0] ?? 0 }
        let parents = messages.map { $0.parentSeq ?? 0 }, noParent = messages.map { $0.parentSeq == nil }
        let mentions = messages.map { ColumnCoding.encodeList($0.mentionedUserIDs) }, versions = messages.map(\.version)
        let ids = messages.map(\.id), channels = messages.map(\.channelID), seqs = messages.map(\.seq)
        let senders = messages.map(\.senderID), texts = messages.map(\.text), times = messages.map(\.createdAt)
        let data = messages.map { $0.dataJSON ?? "" }, noData = messages.map { $0.dataJSON == nil }
        let clientIDs = messages.map { $0.clientMessageID ?? "" }, noClientID = messages.map { $0.clientMessageID == nil }
        let hidden = messages.map { $0.hiddenFrom ?? "" }, notHidden = messages.map { $0.hiddenFrom == nil }
        return """
            WITH counters AS (
                UPDATE channels c SET last_seq = v.last_seq, version = v.version
                FROM unnest(\(advanced)::text[], \(counters)::bigint[], \(versionCounters)::bigint[]) AS v(id, last_seq, version)
                WHERE c.id = v.id
            )
            INSERT INTO messages (id, channel_id, seq, sender_id, text, data_json, client_message_id, created_at, hidden_from,
                parent_seq, mentioned, version, created_version)
            SELECT id, channel_id, seq, sender_id, text,
                CASE WHEN no_data THEN NULL ELSE data END,
                CASE WHEN no_client_id THEN NULL ELSE client_id END,
                created_at,
                CASE WHEN not_hidden THEN NULL ELSE hidden END,
                CASE WHEN no_parent THEN NULL ELSE parent END,
                mentioned, version, version
            FROM unnest(\(ids)::text[], \(channels)::text[], \(seqs)::bigint[], \(senders)::text[], \(texts)::text[],
                        \(data)::text[], \(noData)::boolean[], \(clientIDs)::text[], \(noClientID)::boolean[],
                        \(times)::bigint[], \(hidden)::text[], \(notHidden)::boolean[], \(parents)::bigint[],
                        \(noParent)::boolean[], \(mentions)::text[], \(versions)::bigint[])
                AS t(id, channel_id, seq, sender_id, text, data, no_data, client_id, no_client_id, created_at,
                     hidden, not_hidden, parent, no_parent, mentioned, version)
            """
    }

    // MARK: everything else

    /// A write that is not a message. Those that may be refused on their own run in a savepoint.
    private func applyAlone(_ write: StoreWrite) async throws -> Result<StoreWriteResult, StoreError> {
        switch write {
        case .upsertUser(let user):
            let metadata: String
            do throws(StoreError) { metadata = try ColumnCoding.encodeMetadata(user.metadata) } catch { return .failure(error) }
            try await connection.query("""
                INSERT INTO users (id, name, image, metadata, created_at, last_seen_at, deactivated, muted_users, ban)
                VALUES (\(user.id), \(user.name), \(user.image), \(metadata), \(user.createdAt), \(user.lastSeenAt),
                        \(user.deactivated), \(ColumnCoding.encodeUserSet(user.mutedUsers)), \(ColumnCoding.encodeBan(user.ban)))
                ON CONFLICT (id) DO UPDATE SET name = excluded.name, image = excluded.image, metadata = excluded.metadata,
                    created_at = excluded.created_at, last_seen_at = excluded.last_seen_at, deactivated = excluded.deactivated,
                    muted_users = excluded.muted_users, ban = excluded.ban
                """, logger: logger)
            return .success(.done)
        case .setBlock(let blocker, let blocked, let isBlocked, let at):
            if isBlocked {
                try await connection.query("""
                    INSERT INTO blocks (blocker, blocked, created_at) VALUES (\(blocker), \(blocked), \(at))
                    ON CONFLICT DO NOTHING
                    """, logger: logger)
            } else {
                try await connection.query(
                    "DELETE FROM blocks WHERE blocker = \(blocker) AND blocked = \(blocked)", logger: logger)
            }
            return .success(.done)
        case .markRead(let channelID, let userID, let seq):
            try await connection.query("""
                INSERT INTO read_marks (channel_id, user_id, last_read_seq) VALUES (\(channelID), \(userID), \(seq))
                ON CONFLICT (channel_id, user_id) DO UPDATE
                    SET last_read_seq = GREATEST(read_marks.last_read_seq, excluded.last_read_seq)
                """, logger: logger)
            return .success(.done)
        case .createChannel, .updateChannel, .setUserDeactivated:
            return try await inSavepoint { () async throws -> StoreWriteResult in try await applyRefusable(write) }
        case .changeMessage(let change):
            return try await inSavepoint { try await apply(change) }
        case .insertMessage:
            return .failure(StoreError("insertMessage outside a run"))
        case .insertFlag:
            return .failure(StoreError("insertFlag outside the batch's flags"))
        }
    }

    private func applyRefusable(_ write: StoreWrite) async throws -> StoreWriteResult {
        switch write {
        case .createChannel(let channel):
            try await connection.query("""
                INSERT INTO channels (id, type, name, distinct_flag, is_one_to_one, push_from_blocked, created_at,
                    created_by, inviter_views, roles, frozen, slow_mode_seconds, bans, mutes, last_seq)
                VALUES (\(channel.id), \(channel.type.rawValue), \(channel.name), \(channel.distinct),
                    \(channel.isOneToOne), \(channel.pushFromBlockedUsers), \(channel.createdAt), \(channel.createdBy),
                    \(ColumnCoding.encodeInviterViews(channel.inviterViews)), \(ColumnCoding.encodeRoles(channel.roles)),
                    \(channel.frozen), \(Int32(clamping: channel.slowModeSeconds)), \(ColumnCoding.encodeBans(channel.bans)),
                    \(ColumnCoding.encodeMutes(channel.mutes)), 0)
                """, logger: logger)
            try await insertMembers(of: channel)
            return .channel(lastSeq: 0)
        case .updateChannel(let channel):
            var lastSeq: Int64?
            for try await seq in try await connection.query("""
                UPDATE channels SET type = \(channel.type.rawValue), name = \(channel.name),
                    distinct_flag = \(channel.distinct), is_one_to_one = \(channel.isOneToOne),
                    push_from_blocked = \(channel.pushFromBlockedUsers), created_at = \(channel.createdAt),
                    created_by = \(channel.createdBy), inviter_views = \(ColumnCoding.encodeInviterViews(channel.inviterViews)),
                    roles = \(ColumnCoding.encodeRoles(channel.roles)), frozen = \(channel.frozen),
                    slow_mode_seconds = \(Int32(clamping: channel.slowModeSeconds)), bans = \(ColumnCoding.encodeBans(channel.bans)),
                    mutes = \(ColumnCoding.encodeMutes(channel.mutes))
                WHERE id = \(channel.id) RETURNING last_seq
                """, logger: logger).decode(Int64.self) { lastSeq = seq }
            guard let lastSeq else { throw StoreError("updateChannel: unknown channel \(channel.id)") }
            try await connection.query("DELETE FROM channel_members WHERE channel_id = \(channel.id)", logger: logger)
            try await insertMembers(of: channel)
            return .channel(lastSeq: lastSeq)
        case .setUserDeactivated(let userID, let deactivated):
            var updated = 0
            for try await _ in try await connection.query(
                "UPDATE users SET deactivated = \(deactivated) WHERE id = \(userID) RETURNING id", logger: logger) {
                updated += 1
            }
            if updated == 0 { throw StoreError("setUserDeactivated: unknown user \(userID)") }
        case .upsertUser, .setBlock, .insertMessage, .markRead, .changeMessage, .insertFlag:
            break
        }
        return .done
    }

    /// A change of a stored message (§15) with the channel's next version, unless the stored
    /// row refuses it or it changes nothing. The channel row is locked first, as a message
    /// run locks it: versions follow commit order on every node.
    private func apply(_ change: MessageChange) async throws -> StoreWriteResult {
        var channelVersion: Int64?
        for try await version in try await connection.query(
            "SELECT version FROM channels WHERE id = \(change.channelID) FOR UPDATE", logger: logger).decode(Int64.self) {
            channelVersion = version
        }
        guard let channelVersion else { return .refused(.messageNotFound) }
        guard let current = try await PostgresRows.messages(try await connection.query("""
            SELECT \(unescaped: PostgresRows.messageColumns) FROM messages
            WHERE channel_id = \(change.channelID) AND seq = \(change.seq)
            """, logger: logger)).first else { return .refused(.messageNotFound) }
        if let refusal = change.refusal(against: current) { return .refused(refusal) }
        switch change.action {
        case .edit:
            break
        case .delete:
            if current.isDeleted { return .unchanged(current) }
            try await connection.query(
                "DELETE FROM reactions WHERE channel_id = \(change.channelID) AND seq = \(change.seq)", logger: logger)
        case .addReaction(let kind):
            var inserted = 0
            for try await _ in try await connection.query("""
                INSERT INTO reactions (channel_id, seq, user_id, kind, created_at)
                VALUES (\(change.channelID), \(change.seq), \(change.actor), \(kind), \(change.at))
                ON CONFLICT DO NOTHING RETURNING seq
                """, logger: logger) { inserted += 1 }
            if inserted == 0 { return .unchanged(current) }
        case .removeReaction(let kind):
            var deleted = 0
            for try await _ in try await connection.query("""
                DELETE FROM reactions WHERE channel_id = \(change.channelID) AND seq = \(change.seq)
                AND user_id = \(change.actor) AND kind = \(kind) RETURNING seq
                """, logger: logger) { deleted += 1 }
            if deleted == 0 { return .unchanged(current) }
        }
        var next = change.applied(to: current)
        next.version = channelVersion + 1
        try await connection.query("""
            WITH counter AS (UPDATE channels SET version = \(next.version) WHERE id = \(change.channelID))
            UPDATE messages SET text = \(next.text), data_json = \(next.dataJSON),
                mentioned = \(ColumnCoding.encodeList(next.mentionedUserIDs)), edited_at = \(next.editedAt),
                deleted_at = \(next.deletedAt), hidden_from = \(next.hiddenFrom),
                reactions = \(ColumnCoding.encodeCounts(next.reactions)), version = \(next.version)
            WHERE channel_id = \(change.channelID) AND seq = \(change.seq)
            """, logger: logger)
        return .changed(next, previousVersion: current.version)
    }

    private func insertMembers(of channel: ChatCore.Channel) async throws {
        guard !channel.members.isEmpty else { return }
        let positions = Array(0..<channel.members.count)
        try await connection.query("""
            INSERT INTO channel_members (channel_id, user_id, position)
            SELECT \(channel.id), user_id, position FROM unnest(\(channel.members)::text[], \(positions)::integer[])
                AS m(user_id, position)
            """, logger: logger)
        // A member that has no read mark starts with everything so far read.
        try await connection.query("""
            INSERT INTO read_marks (channel_id, user_id, last_read_seq)
            SELECT \(channel.id), user_id, (SELECT last_seq FROM channels WHERE id = \(channel.id))
            FROM unnest(\(channel.members)::text[]) AS m(user_id)
            ON CONFLICT DO NOTHING
            """, logger: logger)
    }

    /// Runs `body` in a savepoint: a refusal (a server error, or a `StoreError` of ours)
    /// undoes only this write and becomes its result; a lost connection throws.
    private func inSavepoint(_ body: () async throws -> Void) async throws -> Result<StoreWriteResult, StoreError> {
        try await inSavepoint { () async throws -> StoreWriteResult in
            try await body()
            return .done
        }
    }

    private func inSavepoint(_ body: () async throws -> StoreWriteResult) async throws -> Result<StoreWriteResult, StoreError> {
        try await connection.query("SAVEPOINT one_write", logger: logger)
        do {
            let result = try await body()
            try await connection.query("RELEASE SAVEPOINT one_write", logger: logger)
            return .success(result)
        } catch let error as PSQLError where error.code == .server {
            try await connection.query("ROLLBACK TO SAVEPOINT one_write", logger: logger)
            return .failure(StoreError(PostgresErrors.describe(error)))
        } catch let error as StoreError {
            try await connection.query("ROLLBACK TO SAVEPOINT one_write", logger: logger)
            return .failure(error)
        }
    }
}
