import Foundation

/// The web console's files as the gateway serves them: each URL path under
/// `/console` with its bytes, `Content-Type` and entity tag, read once at start.
///
/// `/console` and `/console/` are the page (`console/index.html`); the page's own
/// files are `/console/<name>`; `/console/chat-client.js` is the SDK's entry module
/// (`clients/js/chat-client.js`), so the console imports it as `./chat-client.js`, and
/// `/console/chat-client/<name>.js` are the modules it imports (`clients/js/chat-client/`).
struct ConsoleFiles: Sendable {
    struct File: Sendable {
        let body: [UInt8]
        let contentType: String
        /// A strong validator: a hash of the bytes, quoted (RFC 9110 §8.8.3).
        let entityTag: String
    }

    static let pagePath = "/console"
    private static let pageFile = "console/index.html"
    private static let sdkEntry = "chat-client.js"
    private static let sdkModules = "chat-client/"

    private let byPath: [String: File]

    /// From `ClientAssets.load()`: paths inside the resource folder → bytes.
    init(resources: [String: [UInt8]]) {
        var byPath: [String: File] = [:]
        for (name, bytes) in resources {
            let file = File(body: bytes, contentType: Self.contentType(of: name), entityTag: Self.entityTag(of: bytes))
            if name == Self.pageFile {
                byPath[Self.pagePath] = file
                byPath[Self.pagePath + "/"] = file
            } else if name.hasPrefix("console/") {
                byPath[Self.pagePath + "/" + name.dropFirst("console/".count)] = file
            } else if name == Self.sdkEntry || (name.hasPrefix(Self.sdkModules) && name.hasSuffix(".js")) {
                byPath[Self.pagePath + "/" + name] = file
            }
        }
        self.byPath = byPath
    }

    /// Holds the page (the resource folder was found and has `console/index.html`).
    var hasPage: Bool { byPath[Self.pagePath] != nil }

    func file(at path: String) -> File? { byPath[path] }

    /// Every URL path served, sorted (tests, logs).
    var paths: [String] { byPath.keys.sorted() }

    static func contentType(of name: String) -> String {
        switch name.split(separator: ".").last.map({ $0.lowercased() }) {
        case "html": "text/html; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "js", "mjs": "text/javascript; charset=utf-8"
        case "svg": "image/svg+xml"
        case "png": "image/png"
        case "json": "application/json"
        default: "application/octet-stream"
        }
    }

    /// FNV-1a over the bytes: the tag only has to change when a file does.
    static func entityTag(of bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "\"" + String(repeating: "0", count: 16 - hex.count) + hex + "\""
    }

    /// Whether an `If-None-Match` value names `tag` (a list of tags, or `*`;
    /// weak comparison, RFC 9110 §13.1.2).
    static func ifNoneMatch(_ header: String, matches tag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            var value = candidate.trimmingCharacters(in: .whitespaces)
            if value == "*" { return true }
            if value.hasPrefix("W/") { value.removeFirst(2) }
            return value == tag
        }
    }
}
