import Logging

/// Renders one log record as a single-line JSON object. Field order is fixed
/// (ts, level, event, label, error, then metadata sorted by key) so lines
/// diff and grep predictably. A metadata key that collides with one of the
/// fixed fields is written with a leading `_` instead of overwriting it.
enum JSONLogLine {
    static let reservedKeys: Set<String> = ["ts", "level", "event", "label", "error"]

    static func render(
        timestamp: String,
        level: Logger.Level,
        event: String,
        label: String,
        error: String?,
        metadata: Logger.Metadata
    ) -> String {
        var out = String()
        out.reserveCapacity(128 + event.utf8.count + label.utf8.count)
        out.append("{\"ts\":")
        appendString(timestamp, to: &out)
        out.append(",\"level\":")
        appendString(level.rawValue, to: &out)
        out.append(",\"event\":")
        appendString(event, to: &out)
        out.append(",\"label\":")
        appendString(label, to: &out)
        if let error {
            out.append(",\"error\":")
            appendString(error, to: &out)
        }
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            out.append(",")
            appendString(reservedKeys.contains(key) ? "_" + key : key, to: &out)
            out.append(":")
            appendValue(value, to: &out)
        }
        out.append("}")
        return out
    }

    static func appendValue(_ value: Logger.Metadata.Value, to out: inout String) {
        switch value {
        case .string(let string):
            appendString(string, to: &out)
        case .stringConvertible(let convertible):
            appendConvertible(convertible, to: &out)
        case .dictionary(let dictionary):
            out.append("{")
            for (index, (key, nested)) in dictionary.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { out.append(",") }
                appendString(key, to: &out)
                out.append(":")
                appendValue(nested, to: &out)
            }
            out.append("}")
        case .array(let array):
            out.append("[")
            for (index, element) in array.enumerated() {
                if index > 0 { out.append(",") }
                appendValue(element, to: &out)
            }
            out.append("]")
        }
    }

    /// Numbers and booleans stay JSON numbers and booleans (so `jq` can
    /// compare them); anything else is its description as a string.
    private static func appendConvertible(_ value: any CustomStringConvertible & Sendable, to out: inout String) {
        switch value {
        case let bool as Bool:
            out.append(bool ? "true" : "false")
        case let integer as any BinaryInteger:
            out.append(integer.description)
        case let double as Double where double.isFinite:
            out.append(double.description)
        case let float as Float where float.isFinite:
            out.append(float.description)
        default:
            appendString(value.description, to: &out)
        }
    }

    /// RFC 8259 string escaping: quote, backslash and all control characters.
    static func appendString(_ string: String, to out: inout String) {
        out.append("\"")
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out.append("\\\"")
            case "\\": out.append("\\\\")
            case "\n": out.append("\\n")
            case "\r": out.append("\\r")
            case "\t": out.append("\\t")
            case "\u{08}": out.append("\\b")
            case "\u{0C}": out.append("\\f")
            case "\u{00}"..."\u{1F}":
                out.append("\\u00")
                out.append(hexDigits[Int(scalar.value >> 4)])
                out.append(hexDigits[Int(scalar.value & 0xF)])
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        out.append("\"")
    }

    private static let hexDigits: [Character] = Array("0123456789abcdef")
}
