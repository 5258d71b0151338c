import Foundation
import Testing

/// docs/PROTOCOL.md is the complete wire reference: a request type, an event, an error code
/// or an admin route that the code handles and the page does not describe breaks this suite,
/// and so does a page entry the code no longer has. The checks read the source files as
/// text, so they hold whatever the code's structure becomes, as long as the spellings the
/// regular expressions look for stay (each failure says which file and pattern it read).
@Suite("Protocol reference")
struct ProtocolReferenceTests {
    /// The package root: Tests/GatewayTests/ProtocolReferenceTests.swift, three levels up.
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // GatewayTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // package root

    /// Requests answered outside `RequestDecoder` (`auth` opens an `?auth=message` session).
    static let requestsOutsideDecoder = ["auth"]

    /// Events whose name reaches `WireEncoding.event` through a variable, not a literal.
    static let eventsNamedThroughVariables = ["typing.start", "typing.stop"]

    /// The routes of `AdminAPI.dispatch`, one per `case ("METHOD", …)` line, as the page's
    /// headings spell them.
    static let adminRoutes = [
        "POST /v1/admin/users/{id}/blocks",
        "DELETE /v1/admin/users/{id}/blocks/{target}",
        "GET /v1/admin/users/{id}/blocks",
        "POST /v1/admin/users",
        "POST /v1/admin/users/{id}/deactivate",
        "POST /v1/admin/tokens",
        "POST /v1/admin/channels",
        "POST /v1/admin/channels/{id}",
        "POST /v1/admin/users/{id}/ban",
        "DELETE /v1/admin/users/{id}/ban",
        "POST /v1/admin/channels/{id}/roles",
        "POST /v1/admin/channels/{id}/bans",
        "DELETE /v1/admin/channels/{id}/bans/{userId}",
        "GET /v1/admin/flags",
        "DELETE /v1/admin/channels/{id}/messages/{seq}",
    ]

    // MARK: Requests

    @Test("every request type RequestDecoder answers has a ### `type` heading in the Requests section")
    func requestTypesHaveHeadings() throws {
        let decoder = try Self.read("Sources/ChatCore/Wire/RequestDecoder.swift")
        let decoded = try Self.captures(#"case\s+"([^"\n]+)"\s*:"#, in: decoder)
        #expect(decoded.count >= 20, "found only \(decoded.count) `case \"…\":` request types in RequestDecoder.swift: \(decoded)")
        let documented = try Self.headings(inSection: "Requests")
        for type in decoded {
            #expect(documented.contains(type),
                    "request type \"\(type)\" (RequestDecoder.swift) has no ### `\(type)` heading under ## Requests in docs/PROTOCOL.md")
        }
        let authSource = try Self.read("Sources/Gateway/Chat/AuthRequest.swift")
        for type in Self.requestsOutsideDecoder {
            #expect(authSource.contains("\"\(type)\""), "request type \"\(type)\" is no longer read in AuthRequest.swift")
            #expect(documented.contains(type), "request type \"\(type)\" has no ### `\(type)` heading under ## Requests in docs/PROTOCOL.md")
        }
        let known = Set(decoded + Self.requestsOutsideDecoder)
        for heading in documented where !known.contains(heading) {
            Issue.record("docs/PROTOCOL.md documents request type \"\(heading)\", which the gateway does not answer")
        }
    }

    // MARK: Events

    @Test("every event the gateway sends has a ### `name` heading in the Events section")
    func eventsHaveHeadings() throws {
        var literal: Set<String> = []
        var throughVariables = 0
        for file in try Self.swiftFiles(under: "Sources") {
            let text = try String(contentsOf: file, encoding: .utf8)
            for argument in try Self.captures(#"WireEncoding\.event\(([^)\n]*)\)"#, in: text) {
                let names = try Self.captures(#""([A-Za-z]+(?:\.[A-Za-z]+)+)""#, in: argument)
                if names.isEmpty { throughVariables += 1 }
                literal.formUnion(names)
            }
        }
        #expect(literal.count >= 8, "found only \(literal.count) event names in WireEncoding.event(…) calls: \(literal.sorted())")
        #expect(throughVariables == 1,
                "\(throughVariables) WireEncoding.event(…) calls name their event through a variable (expected 1, typing): list the new names in eventsNamedThroughVariables")
        let typing = try Self.read("Sources/ChatCore/Engine/ChatEngine+Typing.swift")
        for name in Self.eventsNamedThroughVariables {
            #expect(typing.contains("\"\(name)\""), "event \"\(name)\" is no longer spelled in ChatEngine+Typing.swift")
        }
        let sent = literal.union(Self.eventsNamedThroughVariables)
        let documented = try Self.headings(inSection: "Events")
        for name in sent.sorted() {
            #expect(documented.contains(name), "event \"\(name)\" has no ### `\(name)` heading under ## Events in docs/PROTOCOL.md")
        }
        for heading in documented where !sent.contains(heading) {
            Issue.record("docs/PROTOCOL.md documents event \"\(heading)\", which the gateway does not send")
        }
    }

    // MARK: Error codes

    @Test("every ERR_ code in Sources/ has a row in the error table, and every row names a code in Sources/")
    func errorCodesAreDocumented() throws {
        var codes: Set<String> = []
        for file in try Self.swiftFiles(under: "Sources") {
            let text = try String(contentsOf: file, encoding: .utf8)
            // ChatError's raw values ("ERR_BAD_REQUEST") and the HTTP answers' literals alike.
            try codes.formUnion(Self.captures(#"(?<![A-Za-z0-9_])(ERR_[A-Z][A-Z_]*)(?![A-Za-z0-9])"#, in: text))
        }
        #expect(codes.count >= 15, "found only \(codes.count) ERR_ codes in Sources/: \(codes.sorted())")
        let chatError = try Self.read("Sources/ChatCore/Domain/ChatError.swift")
        let enumCodes = try Self.captures(#"case\s+\w+\s*=\s*"(ERR_[A-Z_]+)""#, in: chatError)
        #expect(enumCodes.count >= 10, "ErrorCode in ChatError.swift no longer spells its codes as raw values: \(enumCodes)")

        let page = try Self.page()
        let rows = try Set(Self.captures(#"(?m)^\|\s*`(ERR_[A-Z_]+)`\s*\|"#, in: page))
        for code in codes.sorted() {
            #expect(rows.contains(code), "\(code) occurs in Sources/ but has no row in the error table of docs/PROTOCOL.md")
        }
        for code in rows.sorted() where !codes.contains(code) {
            Issue.record("docs/PROTOCOL.md's error table lists \(code), which no file in Sources/ mentions")
        }
    }

    // MARK: Admin API

    @Test("every admin route AdminAPI.swift dispatches has a ### METHOD /v1/admin/… heading")
    func adminRoutesAreDocumented() throws {
        let source = try Self.read("Sources/Gateway/Admin/AdminAPI.swift")
        let methods = try Self.captures(#"(?m)^\s*case\s+\("([A-Z]+)""#, in: source)
        #expect(methods.count == Self.adminRoutes.count,
                "AdminAPI.swift has \(methods.count) `case (\"METHOD\", …)` routes, the list in this test \(Self.adminRoutes.count): document the new route and add it to adminRoutes")
        let listed = Self.adminRoutes.compactMap { $0.split(separator: " ").first.map(String.init) }
        #expect(methods.sorted() == listed.sorted(), "the methods of AdminAPI.swift's routes \(methods.sorted()) differ from adminRoutes \(listed.sorted())")

        let page = try Self.page()
        let headings = Set(page.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        })
        for route in Self.adminRoutes {
            #expect(headings.contains("### " + route), "admin route \(route) has no `### \(route)` heading in docs/PROTOCOL.md")
            // The route's first path segment after /v1/admin/ is what dispatch matches on.
            let segments = route.split(separator: "/").map(String.init)
            if segments.count > 3 {
                let resource = segments[3]
                #expect(source.contains("\"\(resource)\""), "AdminAPI.swift no longer matches \"\(resource)\" (route \(route))")
            } else {
                Issue.record("admin route \(route) is not of the form METHOD /v1/admin/resource…")
            }
        }
    }

    // MARK: Reading the files

    static func read(_ relativePath: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relativePath), encoding: .utf8)
    }

    static func page() throws -> String {
        try read("docs/PROTOCOL.md")
    }

    /// The names of the `### \`name\`` headings between `## <section>` and the next `## `.
    static func headings(inSection section: String) throws -> Set<String> {
        var inside = false
        var names: Set<String> = []
        for line in try page().split(separator: "\n", omittingEmptySubsequences: false) {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("## ") {
                inside = text == "## " + section
                continue
            }
            guard inside, text.hasPrefix("### `"), text.hasSuffix("`"), text.count > 6 else { continue }
            names.insert(String(text.dropFirst(5).dropLast()))
        }
        #expect(!names.isEmpty, "docs/PROTOCOL.md has no ### `…` headings under ## \(section)")
        return names
    }

    /// Every `.swift` file below `relativePath`.
    static func swiftFiles(under relativePath: String) throws -> [URL] {
        let directory = root.appendingPathComponent(relativePath)
        let enumerator = try #require(FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil),
                                      "cannot list \(directory.path)")
        var files: [URL] = []
        while let next = enumerator.nextObject() {
            if let url = next as? URL, url.pathExtension == "swift" { files.append(url) }
        }
        #expect(!files.isEmpty, "no .swift files under \(directory.path)")
        return files
    }

    /// The first capture group of every match of `pattern` (the whole match when it has none).
    static func captures(_ pattern: String, in text: String) throws -> [String] {
        let regex = try NSRegularExpression(pattern: pattern)
        let whole = NSRange(text.startIndex..., in: text)
        return regex.matches(in: text, range: whole).compactMap { match in
            let group = match.numberOfRanges > 1 ? 1 : 0
            guard let range = Range(match.range(at: group), in: text) else { return nil }
            return String(text[range])
        }
    }
}
