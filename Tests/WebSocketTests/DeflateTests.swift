import Testing
@testable import WebSocket

/// Raw deflate of `payload` with the trailing 00 00 FF FF removed (RFC 7692 §7.2.1).
func deflated(_ payload: [UInt8], windowBits: Int = 15) -> [UInt8] {
    var out: [UInt8] = []
    let ok = Deflater(windowBits: windowBits, resetAfterMessage: true).compress(payload, appendingTo: &out)
    #expect(ok)
    return out
}

/// 10 MB of zeros deflated (a few KB), built once for the bomb tests.
let tenMegabyteBomb: [UInt8] = {
    var out: [UInt8] = []
    _ = Deflater(windowBits: 15, resetAfterMessage: true).compress([UInt8](repeating: 0, count: 10_000_000), appendingTo: &out)
    return out
}()

/// A client-role connection that keeps the server's LZ77 window between messages.
private func takeoverClient(maxMessageBytes: Int = 1 << 20) -> WebSocketConnection {
    client(maxMessageBytes: maxMessageBytes, deflate: DeflateParameters(serverNoContextTakeover: false))
}

@Suite struct DeflateTests {
    static let rfcHello: [UInt8] = [0xC1, 0x07, 0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]

    @Test func rfcCompressedHelloToAClient() {
        var connection = takeoverClient()
        #expect(feed(&connection, Self.rfcHello) == [.text("Hello")])
    }

    @Test func rfcCompressedHelloMaskedToAServer() {
        var connection = server(deflate: DeflateParameters())
        let masked = clientFrame(0xC1, Array(Self.rfcHello.dropFirst(2)))
        #expect(feed(&connection, masked) == [.text("Hello")])
    }

    @Test func rfcCompressedFragments() {
        var connection = takeoverClient()
        let bytes: [UInt8] = [0x41, 0x03, 0xF2, 0x48, 0xCD, 0x80, 0x04, 0xC9, 0xC9, 0x07, 0x00]
        #expect(feed(&connection, bytes) == [.text("Hello")])
    }

    @Test("a shared compressed frame is what each no-context server connection would send, and decodes alone",
          arguments: [15, 10])
    func sharedCompressedFrame(windowBits: Int) throws {
        let payload = Array(String(repeating: "fan-out once ", count: 30).utf8)
        let parameters = DeflateParameters(serverMaxWindowBits: windowBits)
        var sender = server(deflate: parameters)
        #expect(sender.sharedCompressionWindowBits(payloadCount: payload.count) == windowBits)
        let shared = try #require(WebSocketConnection.compressedTextFrame(payload, windowBits: windowBits))
        #expect(shared[0] == 0xC1, "FIN + RSV1 + text")
        #expect(shared.count < payload.count)
        // The same bytes as the connection's own encoding, message after message (no context carried).
        #expect(sender.encodeText(payload) == shared)
        #expect(sender.encodeText(payload) == shared)
        var receiver = client(deflate: parameters)
        let text = String(decoding: payload, as: UTF8.self)
        #expect(feed(&receiver, shared + shared) == [.text(text), .text(text)])
    }

    @Test func noSharedFrameWithContextTakeoverOrBelowTheThreshold() {
        let withContext = WebSocketConnection(role: .server, maxMessageBytes: 1 << 20,
                                              deflate: DeflateParameters(serverNoContextTakeover: false))
        #expect(withContext.sharedCompressionWindowBits(payloadCount: 100) == nil)
        let thresholded = WebSocketConnection(role: .server, maxMessageBytes: 1 << 20, deflate: DeflateParameters(),
                                              compressionThreshold: 64)
        #expect(thresholded.sharedCompressionWindowBits(payloadCount: 63) == nil)
        #expect(thresholded.sharedCompressionWindowBits(payloadCount: 64) == 15)
        #expect(client(deflate: DeflateParameters()).sharedCompressionWindowBits(payloadCount: 100) == nil)
        #expect(server().sharedCompressionWindowBits(payloadCount: 100) == nil)
    }

    @Test func rfcSharedSlidingWindow() {
        var connection = takeoverClient()
        let second: [UInt8] = [0xC1, 0x05, 0xF2, 0x00, 0x11, 0x00, 0x00]
        #expect(feed(&connection, Self.rfcHello + second) == [.text("Hello"), .text("Hello")])
    }

    @Test(arguments: [
        [UInt8(0xC1), 0x0B, 0x00, 0x05, 0x00, 0xFA, 0xFF, 0x48, 0x65, 0x6C, 0x6C, 0x6F, 0x00],  // §7.2.3.3 stored block
        [0xC1, 0x08, 0xF3, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00, 0x00],  // §7.2.3.4 BFINAL set
        [0xC1, 0x0D, 0xF2, 0x48, 0x05, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xCA, 0xC9, 0xC9, 0x07, 0x00],  // §7.2.3.5 two blocks
    ])
    func rfcOtherEncodingsOfHello(bytes: [UInt8]) {
        var connection = takeoverClient()
        #expect(feed(&connection, bytes) == [.text("Hello")])
    }

    @Test func uncompressedMessageOnADeflateConnection() {
        var connection = server(deflate: DeflateParameters())
        #expect(feed(&connection, clientFrame(0x81, "plain")) == [.text("plain")])
    }

    @Test(arguments: [
        "permessage-deflate", "permessage-deflate; client_no_context_takeover",
        "permessage-deflate; server_max_window_bits=9", "permessage-deflate; server_max_window_bits=12; client_max_window_bits",
        DeflateParameters.clientOfferHeaderValue,
    ])
    func roundTripBetweenClientAndServer(offer: String) throws {
        let serverSide = try #require(DeflateParameters.negotiate(offers: [offer]))
        let clientSide = try #require(DeflateParameters.clientAccept(response: [serverSide.responseHeaderValue]))
        var clientConnection = client(deflate: clientSide)
        var serverConnection = server(deflate: serverSide)
        var random = SeededRandom(seed: 7)
        let noise = (0..<3000).map { _ in UInt8.random(in: 0...255, using: &random) }
        let texts: [[UInt8]] = [
            Array("Hello".utf8), [], Array(String(repeating: "chat message ", count: 50).utf8),
            Array(String(repeating: "chat message ", count: 50).utf8), Array(String(repeating: "€uro ", count: 14_000).utf8),
        ]
        for text in texts {
            let up = clientConnection.encodeText(text)
            #expect(up[0] == 0xC1, "compressed text frame")
            #expect(up[1] & 0x80 != 0, "client frames are masked")
            #expect(feed(&serverConnection, up) == [.text(text)])
            let down = serverConnection.encodeText(text)
            #expect(down[0] == 0xC1)
            #expect(down[1] & 0x80 == 0, "server frames are not masked")
            #expect(feed(&clientConnection, down) == [.text(text)])
        }
        #expect(feed(&serverConnection, clientConnection.encodeBinary(noise)) == [.binary(noise)])
        #expect(feed(&clientConnection, serverConnection.encodeBinary(noise)) == [.binary(noise)])
    }

    @Test func emptyMessageWithContextTakeover() {
        var sender = server(deflate: DeflateParameters(serverNoContextTakeover: false))
        _ = sender.encodeText(Array("Hello".utf8))
        // RFC 7692 §7.2.3.6: an empty message is the empty stored block 00 (00 00 FF FF stripped).
        #expect(sender.encodeText([]) == [0xC1, 0x01, 0x00])
        var up = client(deflate: DeflateParameters())
        var receiver = server(deflate: DeflateParameters())
        for text in ["Hello", "", "", "Hello", ""] {
            #expect(feed(&receiver, up.encodeText(Array(text.utf8))) == [.text(text)], "\(text)")
        }
    }

    @Test func compressionActuallyShrinksRepetitiveText() {
        var connection = server(deflate: DeflateParameters())
        let text = Array(String(repeating: "abcdefgh", count: 1000).utf8)
        #expect(connection.encodeText(text).count < text.count / 10)
    }

    @Test func serverNoContextTakeoverMakesEveryMessageIndependent() {
        var connection = server(deflate: DeflateParameters(serverNoContextTakeover: true))
        let text = Array(String(repeating: "the same words again ", count: 20).utf8)
        let first = connection.encodeText(text)
        #expect(connection.encodeText(text) == first)
        // A fresh client that never saw the first message can read the second.
        var fresh = client(deflate: DeflateParameters(serverNoContextTakeover: true))
        #expect(feed(&fresh, connection.encodeText(text)) == [.text(text)])
    }

    @Test func contextTakeoverReusesTheWindow() {
        var connection = server(deflate: DeflateParameters(serverNoContextTakeover: false))
        let text = Array(String(repeating: "the same words again ", count: 20).utf8)
        let first = connection.encodeText(text)
        let second = connection.encodeText(text)
        #expect(second.count < first.count)
        var reader = takeoverClient()
        #expect(feed(&reader, first + second) == [.text(text), .text(text)])
    }

    @Test func compressionThreshold() {
        var connection = WebSocketConnection(role: .server, maxMessageBytes: 1 << 20, deflate: DeflateParameters(),
                                             compressionThreshold: 64)
        let short = connection.encodeText(Array("short".utf8))
        #expect(short == [0x81, 0x05] + Array("short".utf8))
        let long = connection.encodeText([UInt8](repeating: 0x61, count: 64))
        #expect(long[0] == 0xC1)
    }

    @Test func compressedInvalidUTF8() {
        var connection = server(deflate: DeflateParameters())
        expectFailure(feed(&connection, clientFrame(0xC1, deflated(Array("bad ".utf8) + [0xED, 0xA0, 0x80]))), 1007)
    }

    @Test func compressedInvalidUTF8FailsFastInTheFirstFragment() {
        var connection = server(deflate: DeflateParameters())
        let payload = deflated(Array("bad ".utf8) + [0xC0, 0x80] + Array(String(repeating: "x", count: 200).utf8))
        expectFailure(feed(&connection, clientFrame(0x41, payload)), 1007)
    }

    @Test func corruptCompressedDataFailsTheConnection() {
        var connection = server(deflate: DeflateParameters())
        // BTYPE 11 is reserved in DEFLATE.
        let events = feed(&connection, clientFrame(0xC1, [0xFF, 0xFF, 0xFF, 0xFF]))
        let code: UInt16? = if case .failed(let c) = events.last { c } else { nil }
        #expect(code == 1007 || code == 1002, "events: \(events)")
        #expect(messages(events).isEmpty)
    }

    @Test func inflatedSizeAtAndOverTheLimit() {
        let payload = [UInt8](repeating: 0x61, count: 5000)
        var atLimit = server(maxMessageBytes: 5000, deflate: DeflateParameters())
        #expect(feed(&atLimit, clientFrame(0xC1, deflated(payload))) == [.text(payload)])
        var overLimit = server(maxMessageBytes: 4999, deflate: DeflateParameters())
        expectFailure(feed(&overLimit, clientFrame(0xC1, deflated(payload))), 1009)
    }

    @Test func decompressionBombIsTooBig() {
        let bomb = tenMegabyteBomb
        #expect(bomb.count < 20_000)
        var connection = server(maxMessageBytes: 65536, deflate: DeflateParameters())
        expectFailure(feed(&connection, clientFrame(0xC2, bomb)), 1009)
        var chunked = server(maxMessageBytes: 65536, deflate: DeflateParameters())
        expectFailure(feed(&chunked, clientFrame(0xC2, bomb), chunkSizes: Array(repeating: 100, count: 1000)), 1009)
    }

    @Test func inflaterOutputStaysWithinTheLimit() {
        let bomb = tenMegabyteBomb
        let limit = 65536
        let inflater = Inflater(resetAfterMessage: true)
        var output: [UInt8] = []
        var failure: WebSocketError?
        bomb.withUnsafeBytes { input in
            do throws(WebSocketError) {
                try inflater.inflate(input, appendingTo: &output, limit: limit)
            } catch {
                failure = error
            }
        }
        #expect(failure?.code == .messageTooBig)
        #expect(output.count <= limit + 1)
        #expect(output.capacity < 3 * limit, "the buffer never grows far past the limit")
    }

    @Test func noLimitDoesNotTrap() {
        var connection = server(maxMessageBytes: Int.max, deflate: DeflateParameters())
        #expect(feed(&connection, clientFrame(0xC1, Array(Self.rfcHello.dropFirst(2)))) == [.text("Hello")])
    }
}
