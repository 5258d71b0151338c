import WebSocket

/// Compressed messages already inflated, shared by the connections of one loop: with
/// --deflate they all receive the same broadcasts, and a gateway that resets its context per
/// message sends identical bytes for an identical message, so one inflate serves every copy.
/// Holds the last `capacity` messages, replacing the oldest first. Touched only on its loop.
final class InflateMemo: MessageInflater {
    /// Hashes its bytes in one call (an `[UInt8]` key feeds the hasher byte by byte).
    private struct Key: Hashable {
        let bytes: [UInt8]

        func hash(into hasher: inout Hasher) {
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    private var entries: [Key: [UInt8]] = [:]
    private var order: [Key] = []
    private var next = 0
    let capacity: Int

    init(capacity: Int = 256) {
        self.capacity = max(1, capacity)
    }

    func inflatedMessage(_ compressed: [UInt8], inflate: () throws(WebSocketError) -> [UInt8]) throws(WebSocketError) -> [UInt8] {
        let key = Key(bytes: compressed)
        if let hit = entries[key] { return hit }
        let plain = try inflate()
        if order.count < capacity {
            order.append(key)
        } else {
            entries[order[next]] = nil
            order[next] = key
            next = (next + 1) % capacity
        }
        entries[key] = plain
        return plain
    }
}
