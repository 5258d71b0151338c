import Foundation
import Logging
import Synchronization
import Testing

@testable import Gateway

@Suite struct JSONLogHandlerTests {
    @Test func lineIsOneJSONObjectWithFieldsAndMetadata() throws {
        let collector = LineCollector()
        var logger = collector.logger(label: "gateway.hub")
        logger[metadataKey: "node"] = "n1"
        logger.info("connection.open", metadata: [
            "connectionId": "c_1",
            "userId": "alice",
            "count": .stringConvertible(42),
            "ratio": .stringConvertible(0.5),
            "tls": .stringConvertible(true),
            "numericString": "7",
            "peer": ["ip": "127.0.0.1", "port": .stringConvertible(5000)],
            "tags": ["a", .stringConvertible(1)],
        ])

        let line = try #require(collector.lines.first)
        #expect(collector.lines.count == 1)
        #expect(!line.contains("\n"))
        #expect(line.hasPrefix(#"{"ts":""#))
        let object = try parse(line)
        #expect(object["level"] as? String == "info")
        #expect(object["event"] as? String == "connection.open")
        #expect(object["label"] as? String == "gateway.hub")
        #expect(object["node"] as? String == "n1")
        #expect(object["connectionId"] as? String == "c_1")
        #expect(object["userId"] as? String == "alice")
        #expect((object["count"] as? NSNumber)?.intValue == 42)
        #expect((object["ratio"] as? NSNumber)?.doubleValue == 0.5)
        #expect(object["tls"] as? Bool == true)
        #expect(object["numericString"] as? String == "7")
        let peer = try #require(object["peer"] as? [String: Any])
        #expect(peer["ip"] as? String == "127.0.0.1")
        #expect((peer["port"] as? NSNumber)?.intValue == 5000)
        let tags = try #require(object["tags"] as? [Any])
        #expect(tags.count == 2)
        let timestamp = try #require(object["ts"] as? String)
        #expect(timestamp.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/) != nil, "\(timestamp)")
    }

    @Test func stringsAreEscaped() throws {
        let tricky = "quote \" backslash \\ newline \n return \r tab \t nul \u{0} bell \u{7} esc \u{1B} é 🚀 \u{2028}"
        let collector = LineCollector()
        let logger = collector.logger(label: "label \"with\" quotes")
        logger.warning("\(tricky)", metadata: ["key \"q\"\n": .string(tricky)])

        let line = try #require(collector.lines.first)
        #expect(!line.contains("\n") && !line.contains("\r") && !line.contains("\u{0}"))
        #expect(line.contains(#"\u0000"#) && line.contains(#"\u0007"#) && line.contains(#"\u001b"#))
        let object = try parse(line)
        #expect(object["event"] as? String == tricky)
        #expect(object["label"] as? String == "label \"with\" quotes")
        #expect(object["key \"q\"\n"] as? String == tricky)
    }

    @Test func metadataMergesAndCannotOverwriteFixedFields() throws {
        let collector = LineCollector()
        var logger = collector.logger(label: "l")
        logger[metadataKey: "userId"] = "from-logger"
        logger.notice("user.blocked", metadata: ["userId": "from-call", "level": "spoofed", "event": "spoofed"])

        let object = try parse(try #require(collector.lines.first))
        #expect(object["userId"] as? String == "from-call")
        #expect(object["level"] as? String == "notice")
        #expect(object["event"] as? String == "user.blocked")
        #expect(object["_level"] as? String == "spoofed")
        #expect(object["_event"] as? String == "spoofed")
    }

    @Test func errorIsAField() throws {
        struct Broken: Error, CustomStringConvertible { var description: String { "disk \"full\"" } }
        let collector = LineCollector()
        collector.logger(label: "l").error("store.commit_failed", error: Broken())
        let object = try parse(try #require(collector.lines.first))
        #expect(object["error"] as? String == "disk \"full\"")
    }

    @Test func levelFilters() {
        let collector = LineCollector()
        let logger = collector.logger(label: "l", level: .warning)
        logger.info("dropped")
        logger.debug("dropped")
        logger.warning("kept")
        #expect(collector.lines.count == 1)
    }

    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (Int64(1_700_000_000_123), "2023-11-14T22:13:20.123Z"),
        (Int64(951_782_400_005), "2000-02-29T00:00:00.005Z"),
        (Int64(4_102_444_799_999), "2099-12-31T23:59:59.999Z"),
        (Int64(-1), "1969-12-31T23:59:59.999Z"),
    ])
    func timestampFormat(milliseconds: Int64, expected: String) {
        #expect(JSONLogTimestamp.format(millisecondsSinceEpoch: milliseconds) == expected)
    }

    /// Lines far larger than PIPE_BUF from many threads at once must come out whole.
    @Test func concurrentLinesDoNotInterleave() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("log-\(UUID().uuidString).jsonl").path
        let fileDescriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fileDescriptor >= 0)
        defer { unlink(path) }
        let sink = FileDescriptorLogSink(fileDescriptor: fileDescriptor)
        let logger = Logger(label: "concurrency") { JSONLogHandler(label: $0, sink: sink.write) }
        let payload = String(repeating: "x", count: 20_000)
        let threads = 8
        let linesPerThread = 50

        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<linesPerThread {
                logger.info("test.line", metadata: ["thread": "\(thread)", "index": "\(index)", "payload": "\(payload)"])
            }
        }
        close(fileDescriptor)

        let contents = try String(contentsOfFile: path, encoding: .utf8)
        let lines = contents.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.last == "", "output ends with a newline")
        #expect(lines.count - 1 == threads * linesPerThread)
        for line in lines.dropLast() {
            let object = try parse(String(line))
            #expect((object["payload"] as? String)?.count == payload.count)
        }
    }
}

/// Collects lines a `JSONLogHandler` emits, from any thread.
private final class LineCollector: Sendable {
    private let storage = Mutex<[String]>([])

    var lines: [String] { storage.withLock { $0 } }

    func logger(label: String, level: Logger.Level = .trace) -> Logger {
        Logger(label: label) { label in
            JSONLogHandler(label: label, level: level) { line in self.storage.withLock { $0.append(line) } }
        }
    }
}

private func parse(_ line: String) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
    return try #require(object as? [String: Any], "not a JSON object: \(line)")
}
