import Foundation
import Testing
@testable import ChatClient
@testable import chat_client_example

/// docs/clients.md's Swift example is the code that runs here: the document holds
/// Sources/chat-client-example/FirstApp.swift verbatim, and the app runs against a live
/// gateway with a friend answering.
@Suite("First app (docs/clients.md)", .serialized)
struct FirstAppTests {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func theDocumentShowsTheExampleThatRuns() throws {
        let source = try String(contentsOf: Self.root.appendingPathComponent("Sources/chat-client-example/FirstApp.swift"),
                                encoding: .utf8)
        let document = try String(contentsOf: Self.root.appendingPathComponent("docs/clients.md"), encoding: .utf8)
        #expect(document.contains("```swift\n" + source + "```"))
    }

    @Test func theFirstAppConnectsListsSendsReceivesAndBlocks() async throws {
        let gateway = try await LiveGateway.start()
        let bob = gateway.client("bob")
        try await bob.connect()
        let bobsEvents = await bob.events()
        let answering = Task {
            for await event in bobsEvents {
                if case .message(let message) = event, message.text == "hello" {
                    _ = try await bob.send("hi alice", to: message.channelId)
                    return
                }
            }
        }
        let lines = Lines()
        try await FirstApp.run(url: gateway.url, friend: "bob", token: { try await gateway.token(for: "alice") },
                               say: { lines.append($0) })
        try await answering.value
        #expect(lines.all == ["sent #1", "bob: hi alice", "blocked bob: true", "blocked list: [\"bob\"]"])
        await bob.disconnect()
    }
}

final class Lines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}
