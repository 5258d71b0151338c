/// Messages that arrived ahead of their channel's next seq, held until the ones before
/// them arrive (DESIGN "order of commit and publish": two nodes may publish one channel's
/// messages out of `seq` order; every node delivers them in order). No clock of its own:
/// the engine asks for a gap read once a channel has held messages for the hold bound.
struct HeldMessages {
    struct Held: Equatable {
        var message: Message
        var json: [UInt8]
        /// The connection that sent it, which gets no `message.new` of its own message.
        var excluding: SessionID?
    }

    private var byChannel: [ChannelID: [Int64: Held]] = [:]

    var isEmpty: Bool { byChannel.isEmpty }

    func holds(_ channel: ChannelID) -> Bool { byChannel[channel] != nil }

    /// Holds `held`; true when it is the channel's first (a gap read must be scheduled).
    mutating func hold(_ held: Held) -> Bool {
        let first = byChannel[held.message.channelID] == nil
        byChannel[held.message.channelID, default: [:]][held.message.seq] = held
        return first
    }

    /// The held message with exactly this seq, removed.
    mutating func take(_ channel: ChannelID, seq: Int64) -> Held? {
        guard let index = byChannel.index(forKey: channel),
              let held = byChannel.values[index].removeValue(forKey: seq) else { return nil }
        if byChannel.values[index].isEmpty { byChannel.remove(at: index) }
        return held
    }

    /// The lowest held seq of the channel.
    func lowest(_ channel: ChannelID) -> Int64? { byChannel[channel]?.keys.min() }

    /// Drops what is at or below `seq` (delivered meanwhile from a gap read).
    mutating func drop(_ channel: ChannelID, upTo seq: Int64) {
        guard var held = byChannel[channel] else { return }
        held = held.filter { $0.key > seq }
        byChannel[channel] = held.isEmpty ? nil : held
    }
}
