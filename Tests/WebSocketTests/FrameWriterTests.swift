import Testing
@testable import WebSocket

@Suite struct FrameWriterTests {
    let key = MaskKey(0x37, 0xFA, 0x21, 0x3D)

    @Test func rfcUnmaskedHello() {
        #expect(FrameWriter.frame(opcode: .text, payload: Array("Hello".utf8))
            == [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
    }

    @Test func rfcMaskedHello() {
        #expect(FrameWriter.frame(opcode: .text, payload: Array("Hello".utf8), maskKey: key)
            == [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
    }

    @Test func rfcPingAndMaskedPong() {
        #expect(FrameWriter.frame(opcode: .ping, payload: Array("Hello".utf8))
            == [0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
        #expect(FrameWriter.frame(opcode: .pong, payload: Array("Hello".utf8), maskKey: key)
            == [0x8A, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
    }

    @Test func rfcFragments() {
        #expect(FrameWriter.frame(opcode: .text, payload: Array("Hel".utf8), fin: false) == [0x01, 0x03, 0x48, 0x65, 0x6C])
        #expect(FrameWriter.frame(opcode: .continuation, payload: Array("lo".utf8)) == [0x80, 0x02, 0x6C, 0x6F])
    }

    @Test func rfc256ByteBinary() {
        let payload = [UInt8](repeating: 0xAB, count: 256)
        let bytes = FrameWriter.frame(opcode: .binary, payload: payload)
        #expect(Array(bytes.prefix(4)) == [0x82, 0x7E, 0x01, 0x00])
        #expect(Array(bytes.dropFirst(4)) == payload)
    }

    @Test func rfc64KiBBinary() {
        let payload = [UInt8](repeating: 0xCD, count: 65536)
        let bytes = FrameWriter.frame(opcode: .binary, payload: payload)
        #expect(Array(bytes.prefix(10)) == [0x82, 0x7F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00])
        #expect(bytes.count == 10 + 65536)
        #expect(Array(bytes.dropFirst(10)) == payload)
    }

    @Test(arguments: [(0, 2), (125, 2), (126, 4), (65535, 4), (65536, 10)])
    func lengthEncodingBoundaries(length: Int, headerBytes: Int) {
        let payload = [UInt8](repeating: 1, count: length)
        let bytes = FrameWriter.frame(opcode: .binary, payload: payload)
        #expect(bytes.count == headerBytes + length)
        #expect(Array(bytes.prefix(headerBytes)) == wireHeader(0x82, length: UInt64(length)))
        #expect(FrameHeader(opcode: .binary, payloadLength: UInt64(length)).encodedLength == headerBytes)
        #expect(FrameHeader(opcode: .binary, maskKey: key, payloadLength: UInt64(length)).encodedLength == headerBytes + 4)
    }

    @Test func maskedLongFrameMatchesReferenceMasking() {
        let payload = (0..<1000).map { UInt8(truncatingIfNeeded: $0 * 3) }
        let bytes = FrameWriter.frame(opcode: .binary, payload: payload, maskKey: key)
        #expect(bytes == wireFrame(0x82, payload, mask: rfcMaskKey))
    }

    @Test func headerBits() {
        var buffer: [UInt8] = []
        FrameWriter.appendHeader(FrameHeader(fin: false, rsv1: true, rsv2: true, rsv3: true, opcode: .binary, payloadLength: 0), to: &buffer)
        #expect(buffer == [0x72, 0x00])
        #expect(FrameWriter.frame(opcode: .text, payload: [], rsv1: true) == [0xC1, 0x00])
    }

    @Test func closePayload() {
        #expect(FrameWriter.closePayload(code: .normal, reason: "bye") == [0x03, 0xE8, 0x62, 0x79, 0x65])
        #expect(FrameWriter.closePayload(code: CloseCode(4000), reason: "") == [0x0F, 0xA0])
    }

    @Test func closeReasonCutAtACharacterBoundaryWithin125Bytes() {
        let reason = String(repeating: "é", count: 100)  // 200 bytes of 2-byte characters
        let payload = FrameWriter.closePayload(code: .normal, reason: reason)
        #expect(payload.count == 2 + 122)
        #expect(String(validating: payload.dropFirst(2), as: UTF8.self) == String(repeating: "é", count: 61))
        let ascii = FrameWriter.closePayload(code: .normal, reason: String(repeating: "a", count: 300))
        #expect(ascii.count == 125)
    }
}

@Suite struct MaskKeyTests {
    @Test func applyMatchesBytewiseXorAtEveryOffsetAndLength() {
        let key = MaskKey(0x37, 0xFA, 0x21, 0x3D)
        let source = (0..<41).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        for offset in 0..<8 {
            for length in 0...source.count {
                let slice = Array(source.prefix(length))
                var out: [UInt8] = [0xEE]
                slice.withUnsafeBytes { key.apply($0, offset: offset, appendingTo: &out) }
                #expect(out == [0xEE] + xorMask(slice, rfcMaskKey, offset: offset), "offset \(offset) length \(length)")
                var inPlace = slice
                inPlace.withUnsafeMutableBytes { key.apply(inPlace: $0, offset: offset) }
                #expect(inPlace == xorMask(slice, rfcMaskKey, offset: offset))
            }
        }
    }

    @Test func maskingTwiceRestoresThePayload() {
        let key = MaskKey(1, 2, 3, 4)
        let payload = Array("round trip through the mask".utf8)
        var once: [UInt8] = []
        payload.withUnsafeBytes { key.apply($0, offset: 0, appendingTo: &once) }
        #expect(once != payload)
        var twice: [UInt8] = []
        once.withUnsafeBytes { key.apply($0, offset: 0, appendingTo: &twice) }
        #expect(twice == payload)
    }
}
