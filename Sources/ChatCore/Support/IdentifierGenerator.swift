import Synchronization

/// Message and channel ids: a prefix, the creation time in base 36 and a random
/// part, so ids sort roughly by time and never collide across restarts.
///
/// The random part comes from a SplitMix64 sequence seeded once (from the system
/// generator unless a seed is given: a replay with the same seed and the same inputs
/// makes the same ids): a `getrandom` call and four string conversions per message
/// cost more than the rest of making the message.
public struct IdentifierGenerator: Sendable {
    private let sequence: RandomSequence

    /// Seeded from the system's random generator.
    public init() {
        var system = SystemRandomNumberGenerator()
        sequence = RandomSequence(seed: system.next())
    }

    /// Seeded by the caller (tests, replays).
    public init(seed: UInt64) {
        sequence = RandomSequence(seed: seed)
    }

    public func make(prefix: String, at time: Milliseconds) -> String {
        // 48 random bits are at most 10 base-36 digits, the stamp at most 13.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(prefix.utf8.count + 23)
        bytes.append(contentsOf: prefix.utf8)
        Self.appendBase36(UInt64(max(0, time)), minimumDigits: 1, to: &bytes)
        Self.appendBase36(sequence.next() & 0xFFFF_FFFF_FFFF, minimumDigits: 10, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func appendBase36(_ value: UInt64, minimumDigits: Int, to bytes: inout [UInt8]) {
        let start = bytes.count
        var rest = value
        repeat {
            let digit = UInt8(rest % 36)
            bytes.append(digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10)
            rest /= 36
        } while rest > 0 || bytes.count - start < minimumDigits
        bytes[start...].reverse()
    }
}

/// SplitMix64 over an atomic counter: distinct, well-mixed values from any thread.
private final class RandomSequence: Sendable {
    private let state: Atomic<UInt64>

    init(seed: UInt64) {
        state = Atomic(seed)
    }

    func next() -> UInt64 {
        var z = state.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
