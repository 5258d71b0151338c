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
        // 48 random bits are at most 10 base-36 digits, the stamp at most 13: the id is
        // written straight into the string's own storage.
        let prefixCount = prefix.utf8.count
        let stamp = UInt64(max(0, time))
        let random = sequence.next() & 0xFFFF_FFFF_FFFF
        let stampDigits = Self.digitCount(stamp, minimum: 1)
        let randomDigits = Self.digitCount(random, minimum: 10)
        return String(unsafeUninitializedCapacity: prefixCount + stampDigits + randomDigits) { buffer in
            var end = 0
            for byte in prefix.utf8 {
                buffer[end] = byte
                end += 1
            }
            end += stampDigits
            Self.writeBase36(stamp, endingAt: end, digits: stampDigits, in: buffer)
            end += randomDigits
            Self.writeBase36(random, endingAt: end, digits: randomDigits, in: buffer)
            return end
        }
    }

    /// Base-36 digits of `value`, at least `minimum` (zero-padded).
    private static func digitCount(_ value: UInt64, minimum: Int) -> Int {
        var count = 1
        var rest = value / 36
        while rest > 0 {
            count += 1
            rest /= 36
        }
        return max(count, minimum)
    }

    /// Writes `digits` base-36 digits of `value` (zero-padded) ending before `end`.
    private static func writeBase36(_ value: UInt64, endingAt end: Int, digits: Int,
                                    in buffer: UnsafeMutableBufferPointer<UInt8>) {
        var rest = value
        for index in stride(from: end - 1, through: end - digits, by: -1) {
            let digit = UInt8(rest % 36)
            buffer[index] = digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10
            rest /= 36
        }
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
