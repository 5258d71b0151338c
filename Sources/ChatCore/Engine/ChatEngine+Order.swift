extension ChatEngine {
    /// How long a channel's messages wait for a missing predecessor before the engine reads
    /// it from the store (the node that committed it may have died before publishing it,
    /// or this node missed it during a bus outage).
    public static let gapHoldMilliseconds: Milliseconds = 100

    /// Records a committed message and fans it out once every message before it in its
    /// channel has been: at or below the channel's newest seq it is already here (a retry's
    /// message published again, a gap read) and is dropped; right after it, it goes out
    /// with every held message that follows; further ahead, it is held.
    mutating func recordInOrder(_ stored: Message, json: [UInt8], in channel: Channel, excluding: SessionID?,
                                monotonicNow: Milliseconds) -> [EngineEffect] {
        if followsSomeChannels {
            // A cluster node: a channel it does not follow has no local member to tell, and
            // what it knows of it is stale; one being read gets this after the read.
            guard let state = interest?.state(of: channel.id) else { return [] }
            if state == .loading {
                deferredStreams[channel.id, default: []].append(.message(stored, json: json, excluding: excluding))
                return []
            }
        }
        let newest = directory.newestMessage(of: channel.id)?.seq ?? 0
        if stored.seq <= newest { return [] }
        if stored.seq > newest + 1 {
            let first = heldMessages.hold(HeldMessages.Held(message: stored, json: json, excluding: excluding))
            return first ? [.checkGapLater(channel.id, afterSeq: newest)] : []
        }
        var effects = record(stored, json: json, in: channel, excluding: excluding, monotonicNow: monotonicNow)
        effects += releaseHeld(channel, monotonicNow: monotonicNow)
        return effects
    }

    /// The hold bound passed for the gap after `afterSeq`: still there, the missing
    /// messages are read from the store.
    public mutating func gapDue(_ channelID: ChannelID, afterSeq: Int64) -> [EngineEffect] {
        guard let lowest = heldMessages.lowest(channelID) else { return [] }
        let newest = directory.newestMessage(of: channelID)?.seq ?? 0
        guard newest == afterSeq else {
            // Filled meanwhile up to another gap: wait for that one in turn.
            return [.checkGapLater(channelID, afterSeq: newest)]
        }
        let id = nextWriteID()
        gapReads[id] = channelID
        // Viewer "" is no user: every message, including those hidden from someone.
        return [.readHistory(id, channel: channelID, viewer: "", beforeSeq: lowest, afterSeq: newest,
                             limit: Int(min(lowest - newest - 1, 100)))]
    }

    /// A gap read's answer (nil: it failed). Its messages are recorded in order; whatever
    /// is still missing after it (the read failed) is skipped, so that live delivery never
    /// stalls behind the store: clients catch up from history on the skipped seq.
    mutating func gapRead(_ channelID: ChannelID, _ batch: [Message]?, monotonicNow: Milliseconds) -> [EngineEffect] {
        guard let channel = directory.channels[channelID] else {
            heldMessages.drop(channelID, upTo: .max)
            return []
        }
        var effects: [EngineEffect] = []
        for message in batch ?? [] {
            effects += recordInOrder(message, json: Self.encode(message), in: channel, excluding: nil,
                                     monotonicNow: monotonicNow)
        }
        guard let lowest = heldMessages.lowest(channelID) else { return effects }
        let newest = directory.newestMessage(of: channelID)?.seq ?? 0
        if batch == nil || batch?.isEmpty == true {
            counters.gapsSkipped += 1
            effects.append(.log(.warning, "bus.gap_skipped", ["channel": .text(channelID), "afterSeq": .number(newest),
                                                               "nextSeq": .number(lowest)]))
            guard let held = heldMessages.take(channelID, seq: lowest) else { return effects }
            effects += record(held.message, json: held.json, in: channel, excluding: held.excluding,
                              monotonicNow: monotonicNow)
            effects += releaseHeld(channel, monotonicNow: monotonicNow)
        }
        if heldMessages.holds(channelID) {
            effects.append(.checkGapLater(channelID, afterSeq: directory.newestMessage(of: channelID)?.seq ?? 0))
        }
        return effects
    }

    /// Fans out the held messages that now follow the channel's newest, in order.
    private mutating func releaseHeld(_ channel: Channel, monotonicNow: Milliseconds) -> [EngineEffect] {
        var effects: [EngineEffect] = []
        while let next = heldMessages.take(channel.id, seq: (directory.newestMessage(of: channel.id)?.seq ?? 0) + 1) {
            effects += record(next.message, json: next.json, in: channel, excluding: next.excluding,
                              monotonicNow: monotonicNow)
        }
        return effects
    }
}
