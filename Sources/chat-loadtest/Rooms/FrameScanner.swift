#if canImport(Glibc)
import Glibc
#endif

/// Reads the few things the tool needs from a gateway text message without a
/// JSON parse: a reply's id and whether it is `ok`, or a `message.new`'s
/// embedded `t=… p=… n=…` stamp (see `MessageEncoder`).
enum FrameScanner {
    enum Finding: Equatable {
        /// A `message.new` sent by this tool: send time (ns), publisher, sequence number.
        case delivery(stamp: UInt64, publisher: Int, sequence: Int)
        /// A `message.new` whose text carries no stamp of this tool.
        case foreignDelivery
        /// `{"id":N,"type":"ok"|"error",…}`
        case reply(id: Int, ok: Bool)
        case other
    }

    private static let replyPrefix = Array(#"{"id":"#.utf8)
    private static let typeMarker = Array(#","type":""#.utf8)
    private static let messageNew = Array(#""event":"message.new""#.utf8)
    private static let textStamp = Array(#""text":"t="#.utf8)
    /// Where `"event":"message.new"` starts when the gateway writes `{"type":"event",` first.
    private static let usualEventOffset = 16

    static func scan(_ payload: UnsafeRawBufferPointer) -> Finding {
        guard let base = payload.baseAddress else { return .other }
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        let count = payload.count
        if hasPrefix(bytes, count, replyPrefix, at: 0) {
            var index = replyPrefix.count
            guard let id = number(bytes, count, &index), hasPrefix(bytes, count, typeMarker, at: index) else { return .other }
            index += typeMarker.count
            guard index < count else { return .other }
            return .reply(id: Int(id), ok: bytes[index] == UInt8(ascii: "o"))
        }
        guard hasPrefix(bytes, count, messageNew, at: usualEventOffset) || find(messageNew, in: bytes, count, from: 0) != nil else {
            return .other
        }
        guard var index = stampStart(bytes, count, from: usualEventOffset + messageNew.count) else { return .foreignDelivery }
        guard let stamp = number(bytes, count, &index),
              expect(" p=", bytes, count, &index), let publisher = number(bytes, count, &index),
              expect(" n=", bytes, count, &index), let sequence = number(bytes, count, &index)
        else { return .foreignDelivery }
        return .delivery(stamp: stamp, publisher: Int(truncatingIfNeeded: publisher), sequence: Int(truncatingIfNeeded: sequence))
    }

    /// Just past `"text":"t=`. Ids, seq and senderId hold no `=`, so the first `=`
    /// is almost always the stamp's: one memchr instead of a check at every quote.
    private static func stampStart(_ bytes: UnsafePointer<UInt8>, _ count: Int, from start: Int) -> Int? {
        var index = start
        while index < count {
            guard let hit = memchr(bytes + index, Int32(UInt8(ascii: "=")), count - index) else { return nil }
            let equals = bytes.distance(to: hit.assumingMemoryBound(to: UInt8.self))
            let begin = equals + 1 - textStamp.count
            if begin >= 0 && hasPrefix(bytes, count, textStamp, at: begin) { return equals + 1 }
            index = equals + 1
        }
        return nil
    }

    @inline(__always)
    private static func hasPrefix(_ bytes: UnsafePointer<UInt8>, _ count: Int, _ pattern: [UInt8], at offset: Int) -> Bool {
        guard offset + pattern.count <= count else { return false }
        return pattern.withUnsafeBufferPointer { memcmp(bytes + offset, $0.baseAddress!, $0.count) == 0 }
    }

    private static func find(_ pattern: [UInt8], in bytes: UnsafePointer<UInt8>, _ count: Int, from start: Int) -> Int? {
        guard start >= 0, count - start >= pattern.count, let first = pattern.first else { return nil }
        var index = start
        let last = count - pattern.count
        while index <= last {
            guard let hit = memchr(bytes + index, Int32(first), last - index + 1) else { return nil }
            index = bytes.distance(to: hit.assumingMemoryBound(to: UInt8.self))
            if hasPrefix(bytes, count, pattern, at: index) { return index }
            index += 1
        }
        return nil
    }

    private static let seqKey = Array(#""seq":"#.utf8)
    private static let chatterReply = Array(#"{"id":"c","type":""#.utf8)

    /// The `seq` of a `message.new` (the first `"seq":` of the frame: a message's id and
    /// channel id come before it and never hold one).
    static func seq(_ payload: UnsafeRawBufferPointer) -> UInt64? {
        guard let base = payload.baseAddress else { return nil }
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        guard var index = find(seqKey, in: bytes, payload.count, from: 0) else { return nil }
        index += seqKey.count
        return number(bytes, payload.count, &index)
    }

    enum LifecycleEvent {
        case reaction
        case updated
    }

    private static let reactionEvent = Array(#""event":"reaction."#.utf8)
    private static let updatedEvent = Array(#""event":"message.updated""#.utf8)

    /// A §15 event (`reaction.added` / `reaction.removed`, `message.updated`), or nil.
    static func lifecycleEvent(_ payload: UnsafeRawBufferPointer) -> LifecycleEvent? {
        guard let base = payload.baseAddress else { return nil }
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        if hasPrefix(bytes, payload.count, reactionEvent, at: usualEventOffset) { return .reaction }
        if hasPrefix(bytes, payload.count, updatedEvent, at: usualEventOffset) { return .updated }
        return nil
    }

    /// For the reply to a `typing.start` or `channel.markRead` of `--read-and-type` (id `"c"`):
    /// whether it is `ok`; nil for any other frame.
    static func chatterReplyIsOK(_ payload: UnsafeRawBufferPointer) -> Bool? {
        guard let base = payload.baseAddress else { return nil }
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        guard hasPrefix(bytes, payload.count, chatterReply, at: 0), payload.count > chatterReply.count else { return nil }
        return bytes[chatterReply.count] == UInt8(ascii: "o")
    }

    @inline(__always)
    private static func number(_ bytes: UnsafePointer<UInt8>, _ count: Int, _ index: inout Int) -> UInt64? {
        var value: UInt64 = 0
        let start = index
        while index < count, bytes[index] &- 48 < 10 {
            value = value &* 10 &+ UInt64(bytes[index] &- 48)
            index += 1
        }
        return index > start ? value : nil
    }

    @inline(__always)
    private static func expect(_ literal: StaticString, _ bytes: UnsafePointer<UInt8>, _ count: Int, _ index: inout Int) -> Bool {
        let length = literal.utf8CodeUnitCount
        guard index + length <= count, memcmp(bytes + index, literal.utf8Start, length) == 0 else { return false }
        index += length
        return true
    }
}
