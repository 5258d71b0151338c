import WebSocket

/// The little JSON the tool writes and reads outside the hot path: request
/// bodies for the admin API and single string fields of its answers.
enum JSONText {
    /// The WebSocket layer's JSON string quoting.
    static func quote(_ text: String) -> String {
        JSONString.quote(text)
    }

    static func array(_ items: some Sequence<String>) -> String {
        "[" + items.map(quote).joined(separator: ",") + "]"
    }

    /// The value of the first `"name":"…"` in `json` (escapes other than `\"`
    /// and `\\` are kept as written; the ids and tokens read here have none).
    static func firstString(_ name: String, in json: String) -> String? {
        let marker = "\"\(name)\":\""
        guard let start = json.firstRange(of: marker)?.upperBound else { return nil }
        var value = ""
        var escaped = false
        for character in json[start...] {
            if escaped {
                value.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                return value
            } else {
                value.append(character)
            }
        }
        return nil
    }

    /// How many times `needle` occurs in `json`.
    static func occurrences(of needle: String, in json: String) -> Int {
        json.ranges(of: needle).count
    }
}
