/// Number formatting for the table and the progress line (no Foundation).
enum Format {
    /// `value` with exactly `digits` decimals.
    static func fixed(_ value: Double, _ digits: Int) -> String {
        guard value.isFinite else { return "\(value)" }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9.0e18 else { return "\(value)" }
        let integer = Int64(scaled)
        let whole = integer / Int64(scale)
        let fraction = integer % Int64(scale)
        var text = (value < 0 && integer != 0 ? "-" : "") + String(whole)
        if digits > 0 {
            let f = String(fraction)
            text += "." + String(repeating: "0", count: digits - f.count) + f
        }
        return text
    }

    /// An integer with thousands separators.
    static func grouped(_ value: Int) -> String {
        let digits = String(abs(value))
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return value < 0 ? "-" + out : out
    }

    /// Two columns, the names padded to the longest, one row a line.
    static func table(_ rows: [(String, String)]) -> String {
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { padded($0.0, width) + "  " + $0.1 }.joined(separator: "\n") + "\n"
    }

    static func padded(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    static func percent(_ part: Int, of whole: Int) -> String {
        whole == 0 ? "0" : fixed(Double(part) * 100 / Double(whole), 4)
    }
}
