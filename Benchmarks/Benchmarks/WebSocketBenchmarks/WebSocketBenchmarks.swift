// Micro-benchmarks for the sans-IO WebSocket core.
//
//   cd Benchmarks && swift package --disable-sandbox benchmark
//
// Each benchmark runs `benchmark.scaledIterations` operations per measured
// iteration, so `throughput` reads as operations (messages) per second and
// malloc counts as mallocs per operation. Bytes/s = throughput × the message
// size in the benchmark's name.
import Benchmark
import WebSocket

// MARK: inputs

/// A masked client text frame carrying `count` bytes of ASCII text.
private func maskedTextFrame(payloadBytes count: Int) -> [UInt8] {
    let text = (0..<count).map { UInt8(ascii: "a") + UInt8($0 % 26) }
    return FrameWriter.frame(opcode: .text, payload: text, maskKey: MaskKey(0x37, 0xFA, 0x21, 0x3D))
}

/// 64 KiB of text: every line mixes ASCII with 2-, 3- and 4-byte characters.
private func mixedText(bytes count: Int) -> [UInt8] {
    let line = Array("Grüße, 你好, こんにちは, привет, 👋🏽 — chat ok ✓\n".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(count + line.count)
    while out.count + line.count <= count { out += line }
    out += Array(repeating: UInt8(ascii: "."), count: count - out.count)
    precondition(out.count == count && UTF8Validator.isValid(out.withUnsafeBytes { UnsafeRawBufferPointer($0) }))
    return out
}

/// A chat event as the gateway sends it (about 230 bytes).
private let chatMessage = Array("""
    {"type":"event","event":"message.new","data":{"id":"m_01HF8Z2K9QW3X7V5T4R6Y1N0PB","channelId":"c_42","seq":1234,\
    "senderId":"alice","text":"hey, are we still on for lunch tomorrow?","data":null,"clientMessageId":"a1b2c3",\
    "createdAt":1763750000000}}
    """.utf8)

private let metrics: [BenchmarkMetric] = [.throughput, .wallClock, .mallocCountTotal]

private func configuration(_ scaling: BenchmarkScalingFactor) -> Benchmark.Configuration {
    .init(metrics: metrics, warmupIterations: 5, scalingFactor: scaling, maxDuration: .seconds(3), maxIterations: 100_000)
}

private func expectText(_ events: [WebSocketConnection.Event], count: Int) {
    guard events.count == 1, case .text(let payload) = events[0], payload.count == count else {
        fatalError("unexpected events: \(events)")
    }
}

// MARK: benchmarks

let benchmarks: @Sendable () -> Void = {
    // What the harness itself counts per measured iteration (its mallocs show
    // in every benchmark whose scaling factor is .one).
    Benchmark("Harness overhead (empty loop)", configuration: configuration(.one)) { benchmark in
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            blackHole(index)
        }
        benchmark.stopMeasurement()
    }

    // Parse + unmask + UTF-8 check of one masked text frame by a server connection.
    for (label, size, scaling) in [("64 B", 64, BenchmarkScalingFactor.kilo), ("1 KiB", 1024, .kilo), ("64 KiB", 65536, .one)] {
        let frame = maskedTextFrame(payloadBytes: size)
        Benchmark("Receive masked text frame \(label)", configuration: configuration(scaling)) { benchmark in
            var connection = WebSocketConnection(role: .server, maxMessageBytes: 1 << 20)
            var events: [WebSocketConnection.Event] = []
            events.reserveCapacity(4)
            connection.receive(frame, events: &events)
            expectText(events, count: size)
            frame.withUnsafeBytes { bytes in
                benchmark.startMeasurement()
                for _ in benchmark.scaledIterations {
                    events.removeAll(keepingCapacity: true)
                    connection.receive(bytes, events: &events)
                    blackHole(events)
                }
                benchmark.stopMeasurement()
            }
            expectText(events, count: size)
        }
    }

    // UTF-8 validation of 64 KiB.
    for (label, text) in [("ASCII", (0..<65536).map { chatMessage[$0 % chatMessage.count] }),
                          ("mixed multi-byte", mixedText(bytes: 65536))] {
        Benchmark("UTF8Validator 64 KiB \(label)", configuration: configuration(.one)) { benchmark in
            text.withUnsafeBytes { bytes in
                benchmark.startMeasurement()
                for _ in benchmark.scaledIterations {
                    blackHole(UTF8Validator.isValid(bytes))
                }
                benchmark.stopMeasurement()
            }
        }
    }

    // permessage-deflate, as negotiated by a browser's default offer.
    let deflate = DeflateParameters()

    // Server compresses a chat event (server_no_context_takeover: fresh zlib stream per message).
    Benchmark("Deflate chat event \(chatMessage.count) B (encodeText)", configuration: configuration(.kilo)) { benchmark in
        var connection = WebSocketConnection(role: .server, maxMessageBytes: 1 << 20, deflate: deflate)
        let frame = connection.encodeText(chatMessage)
        precondition(frame[0] == 0xC1 && frame.count < chatMessage.count)
        chatMessage.withUnsafeBytes { payload in
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(connection.encodeText(payload))
            }
            benchmark.stopMeasurement()
        }
    }

    // Server receives the compressed event from a client (client context takeover: the inflater lives on).
    Benchmark("Inflate chat event \(chatMessage.count) B (receive)", configuration: configuration(.kilo)) { benchmark in
        var client = WebSocketConnection(role: .client, maxMessageBytes: 1 << 20, deflate: deflate)
        let frame = client.encodeText(chatMessage)
        precondition(frame[0] == 0xC1)
        var connection = WebSocketConnection(role: .server, maxMessageBytes: 1 << 20, deflate: deflate)
        var events: [WebSocketConnection.Event] = []
        events.reserveCapacity(4)
        connection.receive(frame, events: &events)
        expectText(events, count: chatMessage.count)
        frame.withUnsafeBytes { bytes in
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                events.removeAll(keepingCapacity: true)
                connection.receive(bytes, events: &events)
                blackHole(events)
            }
            benchmark.stopMeasurement()
        }
        expectText(events, count: chatMessage.count)
    }
}
