import Testing
@testable import WebSocket

/// A frame as the parser delivered it, payload unmasked.
struct ParsedFrame: Equatable {
    var header: FrameHeader
    var payload: [UInt8]
}

/// Runs the parser over `bytes` (optionally in pieces) and collects whole frames.
func parseFrames(_ bytes: [UInt8], role: FrameParser.Role, max: UInt64 = 1 << 24, chunk: Int? = nil)
    throws(WebSocketError) -> [ParsedFrame]
{
    var parser = FrameParser(role: role, maxPayloadLength: max)
    var frames: [ParsedFrame] = []
    var current: ParsedFrame?
    var failure: WebSocketError?
    var start = 0
    repeat {
        let end = min(bytes.count, start + (chunk ?? bytes.count))
        let piece = Array(bytes[start..<end])
        start = end
        piece.withUnsafeBytes { input in
            var index = 0
            do throws(WebSocketError) {
                loop: while true {
                    switch try parser.next(input, index: &index) {
                    case .needMoreData:
                        break loop
                    case .header(let header):
                        current = ParsedFrame(header: header, payload: [])
                    case .payload(let chunk, let offset):
                        if let key = current?.header.maskKey {
                            var out: [UInt8] = []
                            key.apply(chunk, offset: offset, appendingTo: &out)
                            current?.payload += out
                        } else {
                            current?.payload += Array(chunk)
                        }
                    case .frameEnd:
                        if let frame = current { frames.append(frame) }
                        current = nil
                    }
                }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    } while start < bytes.count
    return frames
}

func parseError(_ bytes: [UInt8], role: FrameParser.Role, max: UInt64 = 1 << 24) -> WebSocketError? {
    do {
        _ = try parseFrames(bytes, role: role, max: max)
        return nil
    } catch {
        return error
    }
}

@Suite struct FrameParserTests {
    @Test func rfcUnmaskedHello() throws {
        let frames = try parseFrames([0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F], role: .client)
        #expect(frames == [ParsedFrame(header: FrameHeader(opcode: .text, payloadLength: 5), payload: Array("Hello".utf8))])
    }

    @Test func rfcMaskedHello() throws {
        let bytes: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        let frames = try parseFrames(bytes, role: .server)
        #expect(frames.count == 1)
        #expect(frames.first?.header.maskKey == MaskKey(0x37, 0xFA, 0x21, 0x3D))
        #expect(frames.first?.header.opcode == .text)
        #expect(frames.first?.payload == Array("Hello".utf8))
    }

    @Test func rfcFragmentedUnmaskedText() throws {
        let bytes: [UInt8] = [0x01, 0x03, 0x48, 0x65, 0x6C, 0x80, 0x02, 0x6C, 0x6F]
        let frames = try parseFrames(bytes, role: .client)
        #expect(frames == [
            ParsedFrame(header: FrameHeader(fin: false, opcode: .text, payloadLength: 3), payload: Array("Hel".utf8)),
            ParsedFrame(header: FrameHeader(opcode: .continuation, payloadLength: 2), payload: Array("lo".utf8)),
        ])
    }

    @Test(arguments: [
        (UInt8(0x0), Opcode.continuation), (0x1, .text), (0x2, .binary), (0x8, .close), (0x9, .ping), (0xA, .pong),
    ])
    func everyDefinedOpcode(raw: UInt8, opcode: Opcode) throws {
        let payload: [UInt8] = [0x03, 0xE8]
        let frames = try parseFrames(clientFrame(0x80 | raw, payload), role: .server)
        #expect(frames.map(\.header.opcode) == [opcode])
        #expect(frames.first?.payload == payload)
        #expect(frames.first?.header.fin == true)
    }

    @Test(arguments: [UInt8(0x3), 0x4, 0x5, 0x6, 0x7, 0xB, 0xC, 0xD, 0xE, 0xF])
    func reservedOpcodesAreProtocolErrors(raw: UInt8) {
        #expect(parseError(clientFrame(0x80 | raw, []), role: .server)?.code == .protocolError)
        #expect(parseError([0x80 | raw, 0x00], role: .client)?.code == .protocolError)
    }

    @Test(arguments: [UInt8(0x20), 0x10, 0x30])
    func rsv2AndRsv3AreProtocolErrors(bits: UInt8) {
        #expect(parseError(clientFrame(0x81 | bits, Array("x".utf8)), role: .server)?.code == .protocolError)
    }

    @Test func rsv1IsReportedToTheConnection() throws {
        let frames = try parseFrames(clientFrame(0xC1, [1, 2]), role: .server)
        #expect(frames.first?.header.rsv1 == true)
    }

    @Test(arguments: [0, 1, 125])
    func sevenBitLength(length: Int) throws {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0) }
        let bytes = wireFrame(0x82, payload)
        #expect(bytes[1] == UInt8(length))
        let frames = try parseFrames(bytes, role: .client)
        #expect(frames.map(\.payload) == [payload])
    }

    @Test func sixteenBitLengthOf256() throws {
        let payload = (0..<256).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let bytes: [UInt8] = [0x82, 0x7E, 0x01, 0x00] + payload
        let frames = try parseFrames(bytes, role: .client)
        #expect(frames.map(\.header.payloadLength) == [256])
        #expect(frames.map(\.payload) == [payload])
    }

    @Test(arguments: [126, 65535])
    func sixteenBitLengthBounds(length: Int) throws {
        let payload = [UInt8](repeating: 0x5A, count: length)
        let bytes: [UInt8] = [0x82, 0x7E, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
        #expect(try parseFrames(bytes, role: .client).map(\.payload) == [payload])
    }

    @Test func sixtyFourBitLengthOf64KiB() throws {
        let payload = (0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let bytes: [UInt8] = [0x82, 0x7F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00] + payload
        let frames = try parseFrames(bytes, role: .client)
        #expect(frames.map(\.header.payloadLength) == [65536])
        #expect(frames.first?.payload == payload)
    }

    @Test func maskedSixtyFourBitLength() throws {
        let payload = (0..<70_001).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let key: [UInt8] = [0x01, 0x80, 0xFE, 0x33]
        let bytes = clientFrame(0x82, payload, key: key)
        #expect(Array(bytes[0..<14]) == [0x82, 0xFF, 0, 0, 0, 0, 0, 0x01, 0x11, 0x71] + key)
        #expect(try parseFrames(bytes, role: .server).map(\.payload) == [payload])
        // The mask phase must carry across split payload chunks of every alignment.
        #expect(try parseFrames(bytes, role: .server, chunk: 4093).map(\.payload) == [payload])
    }

    @Test func serverRoleRejectsUnmaskedFrames() {
        #expect(parseError([0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F], role: .server)?.code == .protocolError)
    }

    @Test func clientRoleRejectsMaskedFrames() {
        let bytes: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        #expect(parseError(bytes, role: .client)?.code == .protocolError)
    }

    @Test(arguments: [UInt8(0x8), 0x9, 0xA])
    func controlFramePayloadOver125(raw: UInt8) {
        let payload = [UInt8](repeating: 0x41, count: 126)
        #expect(parseError(clientFrame(0x80 | raw, payload), role: .server)?.code == .protocolError)
        // Exactly 125 is fine for ping and pong.
        if raw != 0x8 {
            #expect(parseError(clientFrame(0x80 | raw, Array(payload.prefix(125))), role: .server) == nil)
        }
    }

    @Test(arguments: [UInt8(0x8), 0x9, 0xA])
    func fragmentedControlFrame(raw: UInt8) {
        #expect(parseError(clientFrame(raw, []), role: .server)?.code == .protocolError)
    }

    @Test func lengthWithTopBitSet() {
        let bytes: [UInt8] = [0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0x05] + rfcMaskKey
        #expect(parseError(bytes, role: .server, max: .max)?.code == .protocolError)
    }

    @Test func hugeLengthIsTooBigWithoutPayload() {
        // 2^62: far past any limit, must not be converted to Int or allocated.
        let header = wireHeader(0x82, length: 1 << 62, mask: rfcMaskKey)
        #expect(parseError(header, role: .server, max: 65536)?.code == .messageTooBig)
    }

    @Test(arguments: [UInt64(65537), 1 << 32])
    func headerOverTheLimitFailsBeforeThePayload(length: UInt64) {
        let header = wireHeader(0x82, length: length, mask: rfcMaskKey)
        #expect(parseError(header, role: .server, max: 65536)?.code == .messageTooBig)
        // Refused as soon as the length bytes are in, before the mask key.
        #expect(parseError(Array(header.prefix(10)), role: .server, max: 65536)?.code == .messageTooBig)
    }

    @Test func lengthEqualToTheLimitIsAccepted() throws {
        let payload = [UInt8](repeating: 1, count: 300)
        #expect(try parseFrames(clientFrame(0x82, payload), role: .server, max: 300).map(\.payload) == [payload])
    }

    @Test func headerSplitAtEveryByteParsesTheSame() throws {
        let bytes = clientFrame(0x82, [UInt8](repeating: 9, count: 300)) + clientFrame(0x89, [1, 2, 3], key: [9, 8, 7, 6])
        let whole = try parseFrames(bytes, role: .server)
        #expect(whole.count == 2)
        for chunk in 1...15 {
            #expect(try parseFrames(bytes, role: .server, chunk: chunk) == whole)
        }
    }

    @Test func boundaryTracking() {
        var parser = FrameParser(role: .client, maxPayloadLength: 100)
        #expect(parser.isAtFrameBoundary)
        let bytes: [UInt8] = [0x81]
        bytes.withUnsafeBytes { input in
            var index = 0
            _ = try? parser.next(input, index: &index)
            #expect(index == 1)
        }
        #expect(!parser.isAtFrameBoundary)
    }
}
