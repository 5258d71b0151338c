import Testing
@testable import ChatCore
import Base64Coding

struct CursorSealerTests {
    let sealer = CursorSealer(secret: "the-jwt-secret")

    @Test("seal then open gives the fields back", arguments: [
        ["1700000000000", "c_42"], ["bob"], [""], ["", ""], ["a.b", "c=d", "e/f+g"], ["é", "😀", "\u{1E}"],
        ["x", "y", "z", "w"], [String(repeating: "long", count: 300)],
    ])
    func roundTrip(_ fields: [String]) throws {
        let cursor = sealer.seal(fields)
        #expect(try sealer.open(cursor, fieldCount: fields.count) == fields)
        // Another sealer with the same secret (after a restart) opens it too.
        #expect(try CursorSealer(secret: "the-jwt-secret").open(cursor, fieldCount: fields.count) == fields)
        // The cursor is URL- and JSON-safe.
        #expect(cursor.utf8.allSatisfy { c in
            (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39)
                || c == UInt8(ascii: "-") || c == UInt8(ascii: "_") || c == UInt8(ascii: ".")
        })
    }

    @Test("sealing is deterministic and field-sensitive")
    func deterministic() {
        #expect(sealer.seal(["a", "b"]) == sealer.seal(["a", "b"]))
        #expect(sealer.seal(["a", "b"]) != sealer.seal(["a", "c"]))
        #expect(sealer.seal(["a", "b"]) != CursorSealer(secret: "other").seal(["a", "b"]))
    }

    @Test("a foreign secret's cursor is ERR_INVALID_CURSOR")
    func foreignSecret() {
        let cursor = CursorSealer(secret: "someone-else").seal(["1", "c"])
        #expect(errorCode { try sealer.open(cursor, fieldCount: 2) } == .invalidCursor)
        #expect(errorCode { try CursorSealer(secret: "the-jwt-secreT").open(sealer.seal(["1"]), fieldCount: 1) } == .invalidCursor)
        #expect(errorCode { try CursorSealer(secret: "").open(sealer.seal(["1"]), fieldCount: 1) } == .invalidCursor)
    }

    @Test("a wrong field count is ERR_INVALID_CURSOR")
    func wrongFieldCount() {
        let two = sealer.seal(["1", "c"])
        #expect(errorCode { try sealer.open(two, fieldCount: 1) } == .invalidCursor)
        #expect(errorCode { try sealer.open(two, fieldCount: 3) } == .invalidCursor)
        #expect(errorCode { try sealer.open(sealer.seal(["only"]), fieldCount: 2) } == .invalidCursor)
    }

    @Test("malformed cursors are ERR_INVALID_CURSOR", arguments: [
        "", ".", "..", "abc", "abc.", ".abc", "a.b.c", "YQ.YQ.YQ", "!!!.AAAAAAAAAAA", "YQ==.AAAAAAAAAAA",
        "YQ.AAAA", "YQ.AAAAAAAAAAAAAAA", "Y.AAAAAAAAAAA", "YQ.A", "YQ+.AAAAAAAAAAA", "YQ/.AAAAAAAAAAA", "YQ .AAAAAAAAAAA",
    ])
    func malformed(_ cursor: String) {
        #expect(errorCode { try sealer.open(cursor, fieldCount: 1) } == .invalidCursor)
    }

    @Test("truncated cursors are ERR_INVALID_CURSOR")
    func truncated() {
        let cursor = sealer.seal(["1700000000000", "c_42"])
        for length in 0..<cursor.count {
            let prefix = String(cursor.prefix(length))
            #expect(errorCode { try sealer.open(prefix, fieldCount: 2) } == .invalidCursor, "prefix of length \(length)")
        }
        let parts = cursor.split(separator: ".").map(String.init)
        #expect(errorCode { try sealer.open(parts[0], fieldCount: 2) } == .invalidCursor)
        #expect(errorCode { try sealer.open(String(parts[0].dropFirst()) + "." + parts[1], fieldCount: 2) } == .invalidCursor)
        #expect(errorCode { try sealer.open(cursor + "A", fieldCount: 2) } == .invalidCursor)
        #expect(errorCode { try sealer.open(cursor + ".", fieldCount: 2) } == .invalidCursor)
    }

    /// Re-encodes a tampered payload with a valid encoding but the original tag.
    @Test("a tampered payload with the original tag is ERR_INVALID_CURSOR")
    func tamperedPayload() throws {
        let cursor = sealer.seal(["1700000000000", "c_42"])
        let parts = cursor.split(separator: ".").map(String.init)
        let payload = try #require(Base64.decodeURL(parts[0]))
        for index in payload.indices {
            var edited = payload
            edited[index] ^= 0x01
            let forged = Base64.encodeURL(edited) + "." + parts[1]
            #expect(errorCode { try sealer.open(forged, fieldCount: 2) } == .invalidCursor, "byte \(index)")
        }
        // Swap fields / change a value and keep the tag.
        for fields in [["c_42", "1700000000000"], ["1700000000001", "c_42"], ["1700000000000", "c_43"]] {
            let forged = Base64.encodeURL(Array(fields.joined(separator: "\u{1F}").utf8)) + "." + parts[1]
            #expect(errorCode { try sealer.open(forged, fieldCount: 2) } == .invalidCursor)
        }
    }

    @Test("a tampered tag is ERR_INVALID_CURSOR")
    func tamperedTag() throws {
        let cursor = sealer.seal(["1700000000000", "c_42"])
        let parts = cursor.split(separator: ".").map(String.init)
        let tag = try #require(Base64.decodeURL(parts[1]))
        #expect(tag.count == 16)
        for index in tag.indices {
            for bit in 0..<8 {
                var edited = tag
                edited[index] ^= UInt8(1 << bit)
                let forged = parts[0] + "." + Base64.encodeURL(edited)
                #expect(errorCode { try sealer.open(forged, fieldCount: 2) } == .invalidCursor, "byte \(index) bit \(bit)")
            }
        }
    }

    /// PROTOCOL §11: a cursor "the gateway did not issue, or tampered with" is refused.
    /// Changing any one character of an issued cursor must make it invalid — including
    /// the last character of a base64 group, whose low bits carry no data unless the
    /// decoder insists they are zero.
    @Test("changing any single character of an issued cursor is ERR_INVALID_CURSOR")
    func everyCharacterEdit() {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        for fields in [["1700000000000", "c_42"], ["bob"], ["ab"]] {
            let cursor = Array(sealer.seal(fields))
            for position in cursor.indices where cursor[position] != "." {
                for replacement in alphabet where replacement != cursor[position] {
                    var edited = cursor
                    edited[position] = replacement
                    let forged = String(edited)
                    let opened = try? sealer.open(forged, fieldCount: fields.count)
                    #expect(opened == nil, "\(String(cursor)) → \(forged) (position \(position)) must not open")
                }
            }
        }
    }

    // MARK: base64url

    @Test("base64url round trip for every length 0…64")
    func base64RoundTrip() throws {
        var rng = SeededGenerator(seed: 7)
        for length in 0...64 {
            for _ in 0..<8 {
                let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let text = Base64.encodeURL(bytes)
                #expect(text.utf8.count == (length * 4 + 2) / 3, "unpadded length for \(length) bytes")
                #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
                #expect(Base64.decodeURL(text) == bytes, "length \(length)")
            }
        }
        // all byte values
        let all = (0...255).map { UInt8($0) }
        #expect(Base64.decodeURL(Base64.encodeURL(all)) == all)
    }

    @Test("base64url matches RFC 4648 test vectors (unpadded, URL alphabet)")
    func base64Vectors() {
        let vectors: [(String, String)] = [
            ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
        ]
        for (plain, encoded) in vectors {
            #expect(Base64.encodeURL(Array(plain.utf8)) == encoded)
            #expect(Base64.decodeURL(encoded) == Array(plain.utf8))
        }
        #expect(Base64.encodeURL([0xFB, 0xFF]) == "-_8")
        #expect(Base64.encodeURL([0xFF, 0xFF, 0xFE]) == "___-")
        #expect(Base64.decodeURL("-_8") == [0xFB, 0xFF])
    }

    @Test("base64url rejects foreign characters, padding and impossible lengths")
    func base64Invalid() {
        for text in ["A", "AAAAA", "Zg==", "Zm+v", "Zm/v", "Zm9v\n", " Zm9v", "Zm9v!", "é"] {
            #expect(Base64.decodeURL(text) == nil, "\(text.debugDescription)")
        }
    }

    // MARK: HMAC-SHA256

    /// RFC 4231 test cases 1 and 2.
    @Test("HMAC-SHA256 matches RFC 4231; equal compares whole tags")
    func hmacVectors() {
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined() }
        let one = MessageAuthenticator(key: [UInt8](repeating: 0x0B, count: 20)).mac(Array("Hi There".utf8))
        #expect(hex(one) == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        let two = MessageAuthenticator(key: Array("Jefe".utf8)).mac(Array("what do ya want for nothing?".utf8))
        #expect(hex(two) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(MessageAuthenticator.equal(one, one))
        #expect(!MessageAuthenticator.equal(one, two))
        #expect(!MessageAuthenticator.equal(one, Array(one.dropLast())), "a shorter tag is not equal")
        var flipped = one
        flipped[31] ^= 1
        #expect(!MessageAuthenticator.equal(one, flipped))
    }
}
