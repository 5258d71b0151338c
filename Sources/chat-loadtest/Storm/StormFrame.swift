#if canImport(Glibc)
import Glibc
#endif

/// What a `storm` connection reads from a gateway text message, without a JSON parse:
/// the gateway writes the keys in a fixed order and the storm's texts hold no quotes.
struct StormFrame {
    enum Kind: Equatable {
        /// `{"id":N,"type":"ok"|"error",…}`
        case reply(id: Int, ok: Bool)
        /// `{"type":"event","event":"message.new","data":{…}}`
        case messageNew
        case other
    }

    let bytes: [UInt8]
    let kind: Kind

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        var index = Self.replyPrefix.count
        if Self.hasPrefix(bytes, Self.replyPrefix, at: 0), let id = Self.number(bytes, &index),
           Self.hasPrefix(bytes, Self.typeMarker, at: index), index + Self.typeMarker.count < bytes.count {
            kind = .reply(id: Int(id), ok: bytes[index + Self.typeMarker.count] == UInt8(ascii: "o"))
        } else if Self.find(Self.messageNew, in: bytes, from: 0) != nil {
            kind = .messageNew
        } else {
            kind = .other
        }
    }

    private static let replyPrefix = Array(#"{"id":"#.utf8)
    private static let typeMarker = Array(#","type":""#.utf8)
    private static let messageNew = Array(#""event":"message.new""#.utf8)
    private static let seqKey = Array(#""seq":"#.utf8)
    private static let channelKey = Array(#""channelId":""#.utf8)
    private static let nextKey = Array(#""next":"#.utf8)
    private static let codeKey = Array(#""code":""#.utf8)
    private static let retryKey = Array(#""retryAfterMs":"#.utf8)

    /// Every `"seq":N` in order: a message's, or each message's of a history page.
    func forEachSeq(_ body: (Int64) -> Void) {
        var index = 0
        while let found = Self.find(Self.seqKey, in: bytes, from: index) {
            index = found + Self.seqKey.count
            if let seq = Self.number(bytes, &index) { body(Int64(seq)) }
        }
    }

    /// The first `"seq":N` (a `message.new`'s, or a sent message's in its `ok`).
    var firstSeq: Int64? {
        guard let found = Self.find(Self.seqKey, in: bytes, from: 0) else { return nil }
        var index = found + Self.seqKey.count
        return Self.number(bytes, &index).map { Int64($0) }
    }

    var channelID: String? { string(after: Self.channelKey) }

    /// A history page's `next`: `.some(nil)` when it is null, nil when there is no `next`.
    var next: String?? {
        guard let found = Self.find(Self.nextKey, in: bytes, from: 0) else { return nil }
        let start = found + Self.nextKey.count
        guard start < bytes.count else { return nil }
        if bytes[start] == UInt8(ascii: "n") { return .some(nil) }
        guard bytes[start] == UInt8(ascii: "\""), let end = bytes[(start + 1)...].firstIndex(of: UInt8(ascii: "\"")) else {
            return nil
        }
        return .some(String(decoding: bytes[(start + 1)..<end], as: UTF8.self))
    }

    /// An error reply's `code`.
    var errorCode: String? { string(after: Self.codeKey) }

    /// An `ERR_RATE_LIMITED` reply's `retryAfterMs`.
    var retryAfterMs: Int? {
        guard let found = Self.find(Self.retryKey, in: bytes, from: 0) else { return nil }
        var index = found + Self.retryKey.count
        return Self.number(bytes, &index).map { Int($0) }
    }

    var text: String { String(decoding: bytes, as: UTF8.self) }

    private func string(after key: [UInt8]) -> String? {
        guard let found = Self.find(key, in: bytes, from: 0) else { return nil }
        let start = found + key.count
        guard let end = bytes[start...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    private static func hasPrefix(_ bytes: [UInt8], _ pattern: [UInt8], at offset: Int) -> Bool {
        guard offset + pattern.count <= bytes.count else { return false }
        return bytes.withUnsafeBufferPointer { b in
            pattern.withUnsafeBufferPointer { memcmp(b.baseAddress! + offset, $0.baseAddress!, $0.count) == 0 }
        }
    }

    private static func find(_ pattern: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard start >= 0, bytes.count - start >= pattern.count, let first = pattern.first else { return nil }
        return bytes.withUnsafeBufferPointer { buffer -> Int? in
            let base = buffer.baseAddress!
            var index = start
            let last = bytes.count - pattern.count
            while index <= last {
                guard let hit = memchr(base + index, Int32(first), last - index + 1) else { return nil }
                index = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                if pattern.withUnsafeBufferPointer({ memcmp(base + index, $0.baseAddress!, $0.count) == 0 }) { return index }
                index += 1
            }
            return nil
        }
    }

    private static func number(_ bytes: [UInt8], _ index: inout Int) -> UInt64? {
        var value: UInt64 = 0
        let start = index
        while index < bytes.count, bytes[index] &- 48 < 10 {
            value = value &* 10 &+ UInt64(bytes[index] &- 48)
            index += 1
        }
        return index > start ? value : nil
    }
}
