/// Message and channel ids: a prefix, the creation time in base 36 and a random
/// part, so ids sort roughly by time and never collide across restarts.
public struct IdentifierGenerator: Sendable {
    public init() {}

    public func make(prefix: String, at time: Milliseconds) -> String {
        var random = SystemRandomNumberGenerator()
        let bits: UInt64 = random.next() & 0xFFFF_FFFF_FFFF
        let suffix = String(bits, radix: 36)
        let stamp = String(UInt64(max(0, time)), radix: 36)
        return prefix + stamp + String(repeating: "0", count: max(0, 10 - suffix.count)) + suffix
    }
}
