/// What a field off the cluster bus (or out of Redis) may hold. The bus is input like a
/// client's: anyone who can PUBLISH on its channel, or write a key, reaches every node.
/// So every identifier, length and number is checked before it is used, with the rules
/// the gateway applies to clients (user ids as tokens carry them) and bounds no honest
/// node ever comes near; what fails is dropped and counted, never trusted and never
/// converted in a way that can trap.
public enum BusInputRules {
    /// Latest time accepted anywhere (ms since the epoch: the end of year 9999).
    public static let maxMilliseconds: Milliseconds = 253_402_300_799_999
    /// Largest `seq`: doubles (JavaScript clients) hold every integer up to here.
    public static let maxSeq: Int64 = 1 << 53
    /// Longest identifier (channel, message, node) in UTF-8 bytes (the admin API takes a
    /// channel id as given, so these are bounded rather than spelled out).
    public static let maxIdentifierBytes = 1_024
    /// Longest text field (names, message text and data, metadata values) in UTF-8 bytes.
    public static let maxTextBytes = 1 << 20
    /// Most entries in a list (members, inviter views, metadata).
    public static let maxListCount = 100_000

    /// A user id as a token's `sub` must be: 1-128 bytes of [A-Za-z0-9_.@-].
    public static func isUserID(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count) && id.utf8.allSatisfy(isIdentifierByte)
    }

    /// A channel, message or node id: 1-1,024 bytes, no control characters.
    public static func isIdentifier(_ id: String) -> Bool {
        (1...maxIdentifierBytes).contains(id.utf8.count) && id.utf8.allSatisfy { $0 >= 0x20 && $0 != 0x7F }
    }

    public static func isTime(_ value: Int64) -> Bool {
        (0...maxMilliseconds).contains(value)
    }

    public static func isSeq(_ value: Int64) -> Bool {
        (0...maxSeq).contains(value)
    }

    public static func isText(_ value: String) -> Bool {
        value.utf8.count <= maxTextBytes
    }

    /// A sorted-set score (Redis keeps doubles: `inf`, `nan` and 1e300 are all valid
    /// scores) as a time in ms, or nil when it is not a finite time in range.
    public static func milliseconds(fromScore score: Double) -> Milliseconds? {
        guard score.isFinite, score >= 0, score <= Double(maxMilliseconds) else { return nil }
        return Milliseconds(score.rounded(.down))
    }

    /// A score as Redis writes it in a reply (`"1700000000000"`, `"inf"`, `"1.5e+300"`).
    public static func milliseconds(fromScoreText text: String) -> Milliseconds? {
        guard text.utf8.count <= 64, let score = Double(text) else { return nil }
        return milliseconds(fromScore: score)
    }

    /// A decimal time as the presence scripts write it (`"1700000000000"`), in range.
    public static func milliseconds(fromDecimal text: some Collection<UInt8>) -> Milliseconds? {
        guard (1...16).contains(text.count), text.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let value = Int64(String(decoding: text, as: UTF8.self)), isTime(value) else { return nil }
        return value
    }

    private static func isIdentifierByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "."),
             UInt8(ascii: "@"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }
}
