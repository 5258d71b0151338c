import ChatCore
import Storage

/// Applies `StoreWrite`s on the writer connection inside the current
/// transaction, and owns the per-channel `seq` and `version` counters.
///
/// Counters live in memory, loaded lazily from `channels.last_seq` / `version` the
/// first time a channel gets a message or a change. Every channel touched by a batch
/// is remembered; if the batch rolls back its counters are dropped, so they are
/// reloaded from the committed row and a failed batch never leaves a gap. The
/// counters are written once per channel per batch, just before COMMIT.
///
/// A new message is judged against its channel as this transaction sees it (§16,
/// `SendAdmission`): the channel row's moderation fields, whether the sender is a member
/// and the sender's app-wide ban. Those are read at most once per channel, per
/// (channel, sender) and per sender, and kept across batches: this connection is the
/// database's only writer (as for the counters), so an entry stays exact until a write of
/// the channel or user replaces it. Such a write drops the entry first, so the next
/// message reads what the write left (earlier writes of its own batch included); a
/// rollback drops them all.
final class WriteApplier {
    struct Counters {
        var seq: Int64
        var version: Int64
    }

    /// A channel's moderation fields, and the senders whose membership was read.
    private struct ChannelGate {
        var admission: SendAdmission
        var members: [UserID: Bool] = [:]
    }

    /// A sender's app-wide ban as stored (nil: none).
    private struct KnownBan {
        var ban: Ban?
    }

    let connection: SQLiteConnection
    private var lastSeq: [ChannelID: Counters] = [:]
    /// Channels whose counter was loaded or advanced in the open batch: the
    /// counters to forget if it rolls back.
    private var touched: Set<ChannelID> = []
    /// Channels whose counter advanced in the open batch (their row needs `last_seq`).
    private var advanced: Set<ChannelID> = []
    private var gates: [ChannelID: ChannelGate] = [:]
    private var userBans: [UserID: KnownBan] = [:]
    /// Membership answers held in `gates`, for the bound below.
    private var knownMemberships = 0
    /// Past this many entries the moderation state is dropped at the end of a batch and
    /// read again as messages need it: memory stays bounded however many channels and
    /// senders the store sees.
    private static let gateEntryLimit = 100_000

    init(connection: SQLiteConnection) {
        self.connection = connection
    }

    // MARK: batch bookkeeping

    /// Writes the advanced counters into `channels.last_seq` (inside the transaction).
    func storeAdvancedCounters() throws(StoreError) {
        guard !advanced.isEmpty else { return }
        let update = try connection.statement("UPDATE channels SET last_seq = ?1, version = ?3 WHERE id = ?2")
        for channelID in advanced {
            guard let counters = lastSeq[channelID] else { continue }
            try update.bind(counters.seq, at: 1)
            try update.bind(channelID, at: 2)
            try update.bind(counters.version, at: 3)
            try update.run()
        }
    }

    /// The batch committed: its counters are now the durable values.
    func batchCommitted() {
        touched.removeAll(keepingCapacity: true)
        advanced.removeAll(keepingCapacity: true)
        if knownMemberships + gates.count + userBans.count > Self.gateEntryLimit { forgetGates() }
    }

    /// The batch rolled back: forget every counter it touched (reloaded on next use).
    func batchRolledBack() {
        for channelID in touched { lastSeq.removeValue(forKey: channelID) }
        touched.removeAll(keepingCapacity: true)
        advanced.removeAll(keepingCapacity: true)
        forgetGates()
    }

    private func forgetGates() {
        gates.removeAll()
        userBans.removeAll()
        knownMemberships = 0
    }

    // MARK: writes

    func apply(_ write: StoreWrite) throws(StoreError) -> StoreWriteResult {
        switch write {
        case .insertMessage(let message):
            return try insert(message)
        case .changeMessage(let change):
            return try apply(change)
        case .insertFlag(let flag):
            return .flag(try insert(flag))
        case .upsertUser(let user):
            userBans.removeValue(forKey: user.id)
            try upsert(user)
        case .createChannel(let channel):
            forgetGate(of: channel.id)
            try create(channel)
            return .channel(lastSeq: 0)
        case .updateChannel(let channel):
            forgetGate(of: channel.id)
            return .channel(lastSeq: try update(channel))
        case .setUserDeactivated(let userID, let deactivated):
            let statement = try connection.statement("UPDATE users SET deactivated = ?1 WHERE id = ?2")
            try statement.bind(deactivated, at: 1)
            try statement.bind(userID, at: 2)
            try statement.run()
            if connection.changes == 0 { throw StoreError("setUserDeactivated: unknown user \(userID)") }
        case .setBlock(let blocker, let blocked, let isBlocked, let at):
            if isBlocked {
                let statement = try connection.statement(
                    "INSERT INTO blocks (blocker, blocked, created_at) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING")
                try statement.bind(blocker, at: 1)
                try statement.bind(blocked, at: 2)
                try statement.bind(at, at: 3)
                try statement.run()
            } else {
                let statement = try connection.statement("DELETE FROM blocks WHERE blocker = ?1 AND blocked = ?2")
                try statement.bind(blocker, at: 1)
                try statement.bind(blocked, at: 2)
                try statement.run()
            }
        case .markRead(let channelID, let userID, let seq):
            let statement = try connection.statement("""
                INSERT INTO read_marks (channel_id, user_id, last_read_seq) VALUES (?1, ?2, ?3)
                ON CONFLICT (channel_id, user_id) DO UPDATE SET last_read_seq = max(last_read_seq, excluded.last_read_seq)
                """)
            try statement.bind(channelID, at: 1)
            try statement.bind(userID, at: 2)
            try statement.bind(seq, at: 3)
            try statement.run()
        }
        return .done
    }

    /// Stores `message` with the channel's next `seq` and `version`, or returns the message
    /// the sender already stored with the same `clientMessageID`. A sender who is no member,
    /// or a plain member of a frozen channel, is refused; a shadow-banned sender's message is
    /// stored hidden from everyone else (`SendAdmission`). A reply counts in its parent,
    /// which takes the reply's version; a parent that is missing or is itself a reply
    /// refuses the message.
    ///
    /// The insert itself detects the duplicate (`ON CONFLICT DO NOTHING`, then a
    /// lookup only when no row was inserted), so the common case costs no extra
    /// index search.
    private func insert(_ message: Message) throws(StoreError) -> StoreWriteResult {
        var stored = message
        let counters = try currentCounters(of: message.channelID)
        stored.seq = counters.seq + 1
        stored.version = counters.version + 1
        stored.reactions = [:]
        stored.replyCount = 0
        switch try verdict(on: message) {
        case .refuse(let refusal):
            // A retry of a message stored before the ban or freeze still answers with it.
            if let clientMessageID = message.clientMessageID,
               let existing = try ReadQueries.message(on: connection, sender: message.senderID, clientMessageID: clientMessageID) {
                return .existingMessage(existing)
            }
            return .refused(refusal)
        case .store(let hiddenFromEveryone):
            if hiddenFromEveryone { stored.hiddenFrom = Message.hiddenFromEveryone }
        }
        if let parentSeq = message.parentSeq {
            guard let parent = try storedMessage(message.channelID, seq: parentSeq), parent.parentSeq == nil else {
                return .refused(.messageNotFound)
            }
        }
        let statement = try connection.statement("""
            INSERT INTO messages (id, channel_id, seq, sender_id, text, data_json, client_message_id, created_at, hidden_from,
                parent_seq, mentioned, version, created_version)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12) ON CONFLICT DO NOTHING
            """)
        try statement.bind(stored.id, at: 1)
        try statement.bind(stored.channelID, at: 2)
        try statement.bind(stored.seq, at: 3)
        try statement.bind(stored.senderID, at: 4)
        try statement.bind(stored.text, at: 5)
        try statement.bind(stored.dataJSON, at: 6)
        try statement.bind(stored.clientMessageID, at: 7)
        try statement.bind(stored.createdAt, at: 8)
        try statement.bind(stored.hiddenFrom, at: 9)
        try statement.bind(stored.parentSeq, at: 10)
        try statement.bind(ColumnCoding.encodeList(stored.mentionedUserIDs), at: 11)
        try statement.bind(stored.version, at: 12)
        try statement.run()
        guard connection.changes == 1 else {
            // Nothing inserted: an idempotent retry, or a conflicting message id / seq.
            if let clientMessageID = message.clientMessageID,
               let existing = try ReadQueries.message(on: connection, sender: message.senderID, clientMessageID: clientMessageID) {
                return .existingMessage(existing)
            }
            throw StoreError("insertMessage: message \(message.id) conflicts with a stored message (id or seq \(stored.seq) in \(message.channelID))")
        }
        if let parentSeq = stored.parentSeq {
            let parent = try connection.statement(
                "UPDATE messages SET reply_count = reply_count + 1, version = ?3 WHERE channel_id = ?1 AND seq = ?2")
            try parent.bind(stored.channelID, at: 1)
            try parent.bind(parentSeq, at: 2)
            try parent.bind(stored.version, at: 3)
            try parent.run()
        }
        // Only a stored row advances the counters: a failed insert leaves no gap.
        advance(stored.channelID, to: Counters(seq: stored.seq, version: stored.version))
        return .message(stored)
    }

    /// Applies a change to a stored message with the channel's next version, unless the
    /// stored row refuses it or it changes nothing.
    private func apply(_ change: MessageChange) throws(StoreError) -> StoreWriteResult {
        guard let current = try storedMessage(change.channelID, seq: change.seq) else { return .refused(.messageNotFound) }
        if let refusal = change.refusal(against: current) { return .refused(refusal) }
        switch change.action {
        case .edit:
            break
        case .delete:
            if current.isDeleted { return .unchanged(current) }
            let clear = try connection.statement("DELETE FROM reactions WHERE channel_id = ?1 AND seq = ?2")
            try clear.bind(change.channelID, at: 1)
            try clear.bind(change.seq, at: 2)
            try clear.run()
        case .addReaction(let kind):
            let insert = try connection.statement("""
                INSERT INTO reactions (channel_id, seq, user_id, kind, created_at) VALUES (?1, ?2, ?3, ?4, ?5)
                ON CONFLICT DO NOTHING
                """)
            try insert.bind(change.channelID, at: 1)
            try insert.bind(change.seq, at: 2)
            try insert.bind(change.actor, at: 3)
            try insert.bind(kind, at: 4)
            try insert.bind(change.at, at: 5)
            try insert.run()
            if connection.changes == 0 { return .unchanged(current) }
        case .removeReaction(let kind):
            let delete = try connection.statement(
                "DELETE FROM reactions WHERE channel_id = ?1 AND seq = ?2 AND user_id = ?3 AND kind = ?4")
            try delete.bind(change.channelID, at: 1)
            try delete.bind(change.seq, at: 2)
            try delete.bind(change.actor, at: 3)
            try delete.bind(kind, at: 4)
            try delete.run()
            if connection.changes == 0 { return .unchanged(current) }
        }
        var counters = try currentCounters(of: change.channelID)
        counters.version += 1
        var next = change.applied(to: current)
        next.version = counters.version
        let update = try connection.statement("""
            UPDATE messages SET text = ?3, data_json = ?4, mentioned = ?5, edited_at = ?6, deleted_at = ?7, hidden_from = ?8,
                reactions = ?9, version = ?10
            WHERE channel_id = ?1 AND seq = ?2
            """)
        try update.bind(next.channelID, at: 1)
        try update.bind(next.seq, at: 2)
        try update.bind(next.text, at: 3)
        try update.bind(next.dataJSON, at: 4)
        try update.bind(ColumnCoding.encodeList(next.mentionedUserIDs), at: 5)
        try update.bind(next.editedAt, at: 6)
        try update.bind(next.deletedAt, at: 7)
        try update.bind(next.hiddenFrom, at: 8)
        try update.bind(ColumnCoding.encodeCounts(next.reactions), at: 9)
        try update.bind(next.version, at: 10)
        try update.run()
        advance(change.channelID, to: counters)
        return .changed(next, previousVersion: current.version)
    }

    // MARK: moderation at commit (§16)

    private func verdict(on message: Message) throws(StoreError) -> SendAdmission.Verdict {
        let channelID = message.channelID, sender = message.senderID
        if let gate = gates[channelID], let isMember = gate.members[sender], let known = userBans[sender] {
            return gate.admission.verdict(on: message, senderIsMember: isMember, userBan: known.ban)
        }
        let admission: SendAdmission
        if let known = gates[channelID]?.admission {
            admission = known
        } else {
            admission = try readAdmission(of: channelID)
            gates[channelID] = ChannelGate(admission: admission)
        }
        // One statement for both: a sender is read once per channel it sends to.
        let statement = try connection.statement("""
            SELECT EXISTS (SELECT 1 FROM channel_members WHERE channel_id = ?1 AND user_id = ?2),
                (SELECT ban FROM users WHERE id = ?2)
            """)
        try statement.bind(channelID, at: 1)
        try statement.bind(sender, at: 2)
        let (isMember, ban) = try statement.withReset { row throws(StoreError) -> (Bool, Ban?) in
            guard try row.step() else { return (false, nil) }
            return (row.bool(0), ColumnCoding.decodeBan(row.optionalText(1)))
        }
        if gates[channelID]?.members.updateValue(isMember, forKey: sender) == nil { knownMemberships += 1 }
        userBans[sender] = KnownBan(ban: ban)
        return admission.verdict(on: message, senderIsMember: isMember, userBan: ban)
    }

    private func readAdmission(of channelID: ChannelID) throws(StoreError) -> SendAdmission {
        let statement = try connection.statement("SELECT created_by, frozen, roles, bans FROM channels WHERE id = ?1")
        try statement.bind(channelID, at: 1)
        let admission: SendAdmission? = try statement.withReset { row throws(StoreError) in
            guard try row.step() else { return nil }
            return SendAdmission(channelID: channelID, createdBy: row.text(0), frozen: row.bool(1), rolesJSON: row.text(2),
                                 bansJSON: row.text(3))
        }
        guard let admission else { throw StoreError("unknown channel \(channelID)") }
        return admission
    }

    /// Before a write of the channel row or its members: the next message reads them anew.
    private func forgetGate(of channelID: ChannelID) {
        if let gate = gates.removeValue(forKey: channelID) { knownMemberships -= gate.members.count }
    }

    private func storedMessage(_ channelID: ChannelID, seq: Int64) throws(StoreError) -> Message? {
        let statement = try connection.statement(
            "SELECT \(RowMapping.messageColumns) FROM messages WHERE channel_id = ?1 AND seq = ?2")
        try statement.bind(channelID, at: 1)
        try statement.bind(seq, at: 2)
        return try statement.withReset { row throws(StoreError) in try row.step() ? RowMapping.message(from: row) : nil }
    }

    private func advance(_ channelID: ChannelID, to counters: Counters) {
        lastSeq[channelID] = counters
        advanced.insert(channelID)
        touched.insert(channelID)
    }

    private func currentCounters(of channelID: ChannelID) throws(StoreError) -> Counters {
        if let counters = lastSeq[channelID] { return counters }
        let statement = try connection.statement("SELECT last_seq, version FROM channels WHERE id = ?1")
        try statement.bind(channelID, at: 1)
        let counters: Counters? = try statement.withReset { row throws(StoreError) in
            try row.step() ? Counters(seq: row.int64(0), version: row.int64(1)) : nil
        }
        guard let counters else { throw StoreError("unknown channel \(channelID)") }
        lastSeq[channelID] = counters
        touched.insert(channelID)
        return counters
    }

    /// Inserts or replaces every field of the user (the gateway's copy is authoritative).
    private func upsert(_ user: User) throws(StoreError) {
        let statement = try connection.statement("""
            INSERT INTO users (id, name, image, metadata, created_at, last_seen_at, deactivated, muted_users, ban)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
            ON CONFLICT (id) DO UPDATE SET name = excluded.name, image = excluded.image, metadata = excluded.metadata,
                created_at = excluded.created_at, last_seen_at = excluded.last_seen_at, deactivated = excluded.deactivated,
                muted_users = excluded.muted_users, ban = excluded.ban
            """)
        try statement.bind(user.id, at: 1)
        try statement.bind(user.name, at: 2)
        try statement.bind(user.image, at: 3)
        try statement.bind(try ColumnCoding.encodeMetadata(user.metadata), at: 4)
        try statement.bind(user.createdAt, at: 5)
        try statement.bind(user.lastSeenAt, at: 6)
        try statement.bind(user.deactivated, at: 7)
        try statement.bind(ColumnCoding.encodeUserSet(user.mutedUsers), at: 8)
        try statement.bind(ColumnCoding.encodeBan(user.ban), at: 9)
        try statement.run()
    }

    private func create(_ channel: Channel) throws(StoreError) {
        let statement = try connection.statement("""
            INSERT INTO channels (id, type, name, distinct_flag, is_one_to_one, push_from_blocked, created_at, created_by,
                inviter_views, roles, frozen, slow_mode_seconds, bans, mutes, last_seq)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, 0)
            """)
        try bindChannelRow(channel, to: statement)
        try statement.run()
        try insertMembers(of: channel)
    }

    /// Returns the channel's `last_seq` as the update found it.
    private func update(_ channel: Channel) throws(StoreError) -> Int64 {
        let statement = try connection.statement("""
            UPDATE channels SET type = ?2, name = ?3, distinct_flag = ?4, is_one_to_one = ?5, push_from_blocked = ?6,
                created_at = ?7, created_by = ?8, inviter_views = ?9, roles = ?10, frozen = ?11, slow_mode_seconds = ?12,
                bans = ?13, mutes = ?14
            WHERE id = ?1
            """)
        try bindChannelRow(channel, to: statement)
        try statement.run()
        if connection.changes == 0 { throw StoreError("updateChannel: unknown channel \(channel.id)") }
        let delete = try connection.statement("DELETE FROM channel_members WHERE channel_id = ?1")
        try delete.bind(channel.id, at: 1)
        try delete.run()
        try insertMembers(of: channel)
        let lastSeq = try connection.statement("SELECT last_seq FROM channels WHERE id = ?1")
        try lastSeq.bind(channel.id, at: 1)
        return try lastSeq.withReset { row throws(StoreError) in try row.step() ? row.int64(0) : 0 }
    }

    private func bindChannelRow(_ channel: Channel, to statement: SQLiteStatement) throws(StoreError) {
        try statement.bind(channel.id, at: 1)
        try statement.bind(channel.type.rawValue, at: 2)
        try statement.bind(channel.name, at: 3)
        try statement.bind(channel.distinct, at: 4)
        try statement.bind(channel.isOneToOne, at: 5)
        try statement.bind(channel.pushFromBlockedUsers, at: 6)
        try statement.bind(channel.createdAt, at: 7)
        try statement.bind(channel.createdBy, at: 8)
        try statement.bind(ColumnCoding.encodeInviterViews(channel.inviterViews), at: 9)
        try statement.bind(ColumnCoding.encodeRoles(channel.roles), at: 10)
        try statement.bind(channel.frozen, at: 11)
        try statement.bind(channel.slowModeSeconds, at: 12)
        try statement.bind(ColumnCoding.encodeBans(channel.bans), at: 13)
        try statement.bind(ColumnCoding.encodeMutes(channel.mutes), at: 14)
    }

    /// Stores a report with the next flag id (the writer is the only one, so ids rise in
    /// commit order).
    private func insert(_ flag: Flag) throws(StoreError) -> Flag {
        let statement = try connection.statement("""
            INSERT INTO flags (channel_id, seq, message_id, reporter_id, sender_id, reason, created_at)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id
            """)
        try statement.bind(flag.channelID, at: 1)
        try statement.bind(flag.seq, at: 2)
        try statement.bind(flag.messageID, at: 3)
        try statement.bind(flag.reporterID, at: 4)
        try statement.bind(flag.senderID, at: 5)
        try statement.bind(flag.reason, at: 6)
        try statement.bind(flag.createdAt, at: 7)
        let id: Int64? = try statement.withReset { row throws(StoreError) in try row.step() ? row.int64(0) : nil }
        guard let id else { throw StoreError("insertFlag: no id returned") }
        var stored = flag
        stored.id = id
        return stored
    }

    /// The member rows, and a read mark at the channel's newest seq for members that have none.
    private func insertMembers(of channel: Channel) throws(StoreError) {
        let insert = try connection.statement(
            "INSERT INTO channel_members (channel_id, user_id, position) VALUES (?1, ?2, ?3)")
        let mark = try connection.statement(
            "INSERT INTO read_marks (channel_id, user_id, last_read_seq) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING")
        let newestSeq = try currentCounters(of: channel.id).seq
        for (position, userID) in channel.members.enumerated() {
            try insert.bind(channel.id, at: 1)
            try insert.bind(userID, at: 2)
            try insert.bind(position, at: 3)
            try insert.run()
            try mark.bind(channel.id, at: 1)
            try mark.bind(userID, at: 2)
            try mark.bind(newestSeq, at: 3)
            try mark.run()
        }
    }
}
