import Foundation
import Testing
@testable import ChatCore

struct JSONParserTests {
    // MARK: valid documents

    @Test("valid numbers keep their exact lexeme", arguments: [
        "0", "-0", "1", "-1", "17", "1e5", "1E5", "1e+5", "1e-5", "1E-05", "-0.0", "0.5", "1.50", "-12.340e+10",
        "123456789012345678901234567890", "9223372036854775808", "-9223372036854775809", "0e0", "1.0",
    ])
    func validNumber(_ lexeme: String) throws {
        #expect(try JSONParser.parse(lexeme) == .number(lexeme))
        #expect(try JSONParser.parse(" \t\r\n\(lexeme) \n") == .number(lexeme))
        #expect(try JSONParser.parse("[\(lexeme)]") == .array([.number(lexeme)]))
    }

    @Test("invalid numbers", arguments: [
        "01", "-01", "00", "1.", ".5", "+1", "1e", "1e+", "1E-", "-", "--1", "0x10", "NaN", "Infinity", "-Infinity",
        "1.e5", "1..2", "1e5.5", "- 1", "[01]", "[1.]", "{\"a\":01}", "1_000", "٣",
    ])
    func invalidNumber(_ text: String) {
        #expect(parseJSON(text) == nil, "\(text) must be rejected")
    }

    @Test("int64Value: exact integers only")
    func int64Value() {
        #expect(JSONValue.number("17").int64Value == 17)
        #expect(JSONValue.number("-0").int64Value == 0)
        #expect(JSONValue.number("9223372036854775807").int64Value == Int64.max)
        #expect(JSONValue.number("-9223372036854775808").int64Value == Int64.min)
        #expect(JSONValue.number("9223372036854775808").int64Value == nil)
        #expect(JSONValue.number("1.0").int64Value == nil)
        #expect(JSONValue.number("1e2").int64Value == nil)
        #expect(JSONValue.string("1").int64Value == nil)
    }

    @Test("literals and scalars at top level")
    func literals() throws {
        #expect(try JSONParser.parse("true") == .bool(true))
        #expect(try JSONParser.parse("false") == .bool(false))
        #expect(try JSONParser.parse("null") == .null)
        #expect(try JSONParser.parse("\"x\"") == .string("x"))
        #expect(try JSONParser.parse("[]") == .array([]))
        #expect(try JSONParser.parse("{}") == .object(JSONObject()))
        #expect(try JSONParser.parse(" [ 1 , [ ] , { } , \"\" ] ")
            == .array([.number("1"), .array([]), .object(JSONObject()), .string("")]))
    }

    @Test("invalid structure and literals", arguments: [
        "", " ", "tru", "nul", "True", "NULL", "falsey", "[1,]", "[,1]", "[1 2]", "{\"a\":1,}", "{a:1}", "{\"a\" 1}",
        "{\"a\":}", "{\"a\"}", "{,}", "[", "{", "]", "}", "\"abc", "[1", "{\"a\":1", "'a'", "{'a':1}", "[1]]",
        "{1:2}", "{\"a\":1 \"b\":2}", "/* c */ 1", "1 // c",
    ])
    func invalidStructure(_ text: String) {
        #expect(parseJSON(text) == nil, "\(text.debugDescription) must be rejected")
    }

    @Test("trailing garbage is rejected", arguments: [
        "{} x", "1 2", "[] ]", "truex", "null null", "{}{}", "\"a\"\"b\"", "0 0", "[]\u{0}", "{} ,",
    ])
    func trailingGarbage(_ text: String) {
        #expect(parseJSON(text) == nil, "\(text.debugDescription) must be rejected")
    }

    @Test("whitespace is only space, tab, CR, LF")
    func whitespace() {
        #expect(parseJSON(" \t\r\n[ \t\r\n1 \t\r\n] \t\r\n") == .array([.number("1")]))
        #expect(parseJSON("\u{0B}1") == nil)      // vertical tab
        #expect(parseJSON("\u{0C}1") == nil)      // form feed
        #expect(parseJSON("\u{A0}1") == nil)      // no-break space
        #expect(parseJSON("[1,\u{2003}2]") == nil)
    }

    // MARK: strings

    @Test("escapes")
    func escapes() throws {
        #expect(try JSONParser.parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{08}\u{0C}\n\r\t"))
        #expect(try JSONParser.parse(#""\u0041\u00e9\u00E9\u4e2D""#) == .string("Aéé中"))
        #expect(try JSONParser.parse(#""a\u0000b""#) == .string("a\u{0}b"))
        #expect(try JSONParser.parse(#""\u001f""#) == .string("\u{1F}"))
        #expect(try JSONParser.parse(#""x\ny""#) == .string("x\ny"))
        #expect(try JSONParser.parse(#""é\n中""#) == .string("é\n中"))
    }

    @Test("surrogate pairs decode to one scalar")
    func surrogatePairs() throws {
        #expect(try JSONParser.parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try JSONParser.parse(#""\uD83D\uDE00""#) == .string("😀"))
        #expect(try JSONParser.parse(#""a\uD834\uDD1Eb""#) == .string("a𝄞b"))
        #expect(try JSONParser.parse(#""\udbff\udfff""#) == .string("\u{10FFFF}"))
        #expect(try JSONParser.parse(#""\ud800\udc00""#) == .string("\u{10000}"))
        #expect(try JSONParser.parse("\"😀\"") == .string("😀"))
    }

    @Test("invalid escapes and unpaired surrogates", arguments: [
        #""\x""#, #""\a""#, #""\'""#, #""\U0041""#, #""\u12""#, #""\u12G4""#, #""\u""#, #""\"#, #""\u004""#,
        #""\ud83d""#, #""\ud83dx""#, #""\ud83d\u0041""#, #""\ude00""#, #""\ude00\ud83d""#, #""\ud83d\ud83d""#,
        #""\ud83d\""#, #""\ud83d\n""#, #""\udc00""#, #""\udfff""#,
    ])
    func invalidEscape(_ text: String) {
        #expect(parseJSON(text) == nil, "\(text) must be rejected")
    }

    @Test("raw control characters in strings are rejected", arguments: Array(UInt8(0x00)...UInt8(0x1F)))
    func controlCharacters(_ byte: UInt8) {
        let plain: [UInt8] = [0x22, 0x61, byte, 0x62, 0x22]
        #expect((try? JSONParser.parse(plain)) == nil, "raw 0x\(String(byte, radix: 16)) (fast path)")
        // after an escape the parser is on its slow path
        let escaped: [UInt8] = [0x22, 0x5C, 0x6E, byte, 0x22]
        #expect((try? JSONParser.parse(escaped)) == nil, "raw 0x\(String(byte, radix: 16)) (after an escape)")
    }

    @Test("DEL and non-ASCII are fine raw")
    func delAndUnicode() {
        #expect(parseJSON("\"\u{7F}\"") == .string("\u{7F}"))
        #expect(parseJSON("\"\u{2028}\u{2029}\"") == .string("\u{2028}\u{2029}"))
    }

    @Test("invalid UTF-8 in strings is rejected")
    func invalidUTF8() {
        let cases: [[UInt8]] = [
            [0x22, 0xFF, 0x22],
            [0x22, 0xC3, 0x22],               // truncated 2-byte sequence
            [0x22, 0xC0, 0xAF, 0x22],         // overlong "/"
            [0x22, 0xED, 0xA0, 0x80, 0x22],   // encoded surrogate
            [0x22, 0x5C, 0x6E, 0xFF, 0x22],   // after an escape (slow path)
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], // above U+10FFFF
        ]
        for bytes in cases {
            #expect((try? JSONParser.parse(bytes)) == nil, "\(bytes)")
        }
        #expect((try? JSONParser.parse([0x22, 0xC3, 0xA9, 0x22])) == .string("é"))
    }

    // MARK: objects

    @Test("object keys keep document order")
    func keyOrder() throws {
        let value = try JSONParser.parse(#"{"z":1,"a":2,"m":{"y":true,"b":null},"b":[]}"#)
        #expect(value.keys == ["z", "a", "m", "b"])
        #expect(value["m"]?.keys == ["y", "b"])
        #expect(value.jsonText == #"{"z":1,"a":2,"m":{"y":true,"b":null},"b":[]}"#)
    }

    @Test("a duplicate key resolves to its last value")
    func duplicateKey() throws {
        let value = try JSONParser.parse(#"{"a":1,"b":2,"a":3}"#)
        #expect(value["a"] == .number("3"))
        #expect(value["b"] == .number("2"))
        let request = try JSONParser.parse(#"{"type":"me","type":"user.get"}"#)
        #expect(request["type"] == .string("user.get"))
    }

    @Test("escaped keys")
    func escapedKeys() throws {
        let value = try JSONParser.parse(#"{"\u0074ype":"x","a\"b":1}"#)
        #expect(value["type"] == .string("x"))
        #expect(value["a\"b"] == .number("1"))
    }

    // MARK: nesting bound

    private func nested(_ depth: Int, open: String = "[", close: String = "]") -> String {
        String(repeating: open, count: depth) + String(repeating: close, count: depth)
    }

    @Test("nesting up to the bound parses; one deeper is rejected")
    func nestingBound() {
        #expect(parseJSON(nested(32)) != nil)
        #expect(parseJSON(nested(33)) == nil)
        let objects32 = String(repeating: #"{"a":"#, count: 31) + "{}" + String(repeating: "}", count: 31)
        let objects33 = String(repeating: #"{"a":"#, count: 32) + "{}" + String(repeating: "}", count: 32)
        #expect(parseJSON(objects32) != nil)
        #expect(parseJSON(objects33) == nil)
        #expect((try? JSONParser.parse(nested(3), maxDepth: 3)) != nil)
        #expect((try? JSONParser.parse(nested(4), maxDepth: 3)) == nil)
        // Scalars do not count as a level.
        #expect((try? JSONParser.parse("[[[1]]]", maxDepth: 3)) != nil)
    }

    @Test("hostile nesting fails cleanly instead of exhausting the stack")
    func hostileNesting() {
        #expect(parseJSON(String(repeating: "[", count: 200_000)) == nil)
        #expect(parseJSON(String(repeating: #"{"a":"#, count: 100_000)) == nil)
        #expect(parseJSON(nested(100_000)) == nil)
    }

    @Test("parse errors carry the byte offset")
    func errorOffset() {
        do {
            _ = try JSONParser.parse("[1, x]")
            Issue.record("must fail")
        } catch {
            #expect(error.offset == 4)
        }
    }

    // MARK: writer

    @Test("writer escapes what JSON requires and nothing that breaks UTF-8")
    func writerEscaping() {
        #expect(JSONValue.string("a\"b\\c").jsonText == #""a\"b\\c""#)
        #expect(JSONValue.string("\n\r\t").jsonText == #""\n\r\t""#)
        #expect(JSONValue.string("\u{0}\u{1}\u{8}\u{C}\u{1F}").jsonText == #""\u0000\u0001\u0008\u000c\u001f""#)
        #expect(JSONValue.string("é中😀/\u{7F}").jsonText == "\"é中😀/\u{7F}\"")
        #expect(JSONValue.object(JSONObject([("k\n\"", .string("v"))])).jsonText == #"{"k\n\"":"v"}"#)
    }

    @Test("writer separators in nested containers")
    func writerSeparators() {
        var w = JSONWriter()
        w.beginObject()
        w.key("a"); w.beginArray(); w.int(1); w.beginObject(); w.endObject(); w.beginArray(); w.endArray(); w.null(); w.endArray()
        w.key("b"); w.bool(true)
        w.key("c"); w.string(nil as String?)
        w.key("d"); w.raw(#"{"x":[1,2]}"#)
        w.key("e"); w.int(Int64.min)
        w.endObject()
        #expect(w.text == #"{"a":[1,{},[],null],"b":true,"c":null,"d":{"x":[1,2]},"e":-9223372036854775808}"#)
        #expect(parseJSON(w.bytes) != nil)
    }

    /// JSON's escapes one byte at a time: what the writer's word-at-a-time scan must agree with.
    private static func referenceQuoted(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x22]
        for byte in bytes {
            switch byte {
            case 0x22: out += [0x5C, 0x22]
            case 0x5C: out += [0x5C, 0x5C]
            case 0x0A: out += [0x5C, UInt8(ascii: "n")]
            case 0x0D: out += [0x5C, UInt8(ascii: "r")]
            case 0x09: out += [0x5C, UInt8(ascii: "t")]
            case ..<0x20: out += Array(String(format: "\\u%04x", byte).utf8)
            default: out.append(byte)
            }
        }
        return out + [0x22]
    }

    @Test("writer: every escapable byte and its neighbours, at every position of strings up to 40 bytes")
    func writerEscapesAtEveryPosition() {
        // The bytes around each boundary of the escape test (0x20, `"`, `\\`) and UTF-8 lead/continuation bytes.
        let probes: [UInt8] = [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F]
        for length in 1...40 {
            for position in 0..<length {
                for probe in probes {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    bytes[position] = probe
                    var written: [UInt8] = []
                    bytes.withUnsafeBytes { JSONWriter.appendQuoted($0, to: &written) }
                    #expect(written == Self.referenceQuoted(bytes), "length \(length), byte \(probe) at \(position)")
                }
            }
        }
        // Multi-byte characters never look like a byte to escape.
        var w = JSONWriter()
        w.string(String(repeating: "é中😀", count: 5))
        #expect(w.text == "\"" + String(repeating: "é中😀", count: 5) + "\"")
    }

    @Test("writer: integers at every digit count and both ends of Int64")
    func writerIntegers() {
        var values: [Int64] = [0, 1, -1, 9, -9, Int64.max, Int64.min, Int64.max - 1, Int64.min + 1]
        var power: Int64 = 10
        while true {
            values += [power - 1, power, power + 1, -(power - 1), -power]
            let (next, overflow) = power.multipliedReportingOverflow(by: 10)
            if overflow { break }
            power = next
        }
        for value in values {
            var w = JSONWriter()
            w.beginArray(); w.int(value); w.int(value); w.endArray()
            #expect(w.text == "[\(value),\(value)]")
        }
    }

    // MARK: random round trip

    private static let stringPieces: [String] = [
        "a", "Z", "0", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{0}", "\u{1}", "\u{8}", "\u{C}", "\u{1F}", "\u{7F}",
        "é", "ß", "中", "😀", "𝄞", "\u{2028}", "\u{FEFF}", "\u{10FFFF}", "{", "}", "[", "]", ":", ",", "\\u0041", "e\u{301}",
    ]

    private static func randomString(_ rng: inout SeededGenerator) -> String {
        var s = ""
        for _ in 0..<Int.random(in: 0...8, using: &rng) { s += stringPieces.randomElement(using: &rng)! }
        return s
    }

    private static func randomNumber(_ rng: inout SeededGenerator) -> String {
        var s = Bool.random(using: &rng) ? "-" : ""
        s += Bool.random(using: &rng) ? "0" : String(Int.random(in: 1...999_999_999, using: &rng))
        if Bool.random(using: &rng) { s += "." + String(Int.random(in: 0...99_999, using: &rng)) }
        if Bool.random(using: &rng) {
            s += ["e", "E"].randomElement(using: &rng)! + ["", "+", "-"].randomElement(using: &rng)!
            s += String(Int.random(in: 0...300, using: &rng))
        }
        return s
    }

    private static func randomValue(_ rng: inout SeededGenerator, depth: Int) -> JSONValue {
        let choice = Int.random(in: 0..<(depth >= 6 ? 4 : 6), using: &rng)
        switch choice {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .number(randomNumber(&rng))
        case 3: return .string(randomString(&rng))
        case 4:
            return .array((0..<Int.random(in: 0...5, using: &rng)).map { _ in randomValue(&rng, depth: depth + 1) })
        default:
            var entries: [(key: String, value: JSONValue)] = []
            for _ in 0..<Int.random(in: 0...5, using: &rng) {
                entries.append((randomString(&rng), randomValue(&rng, depth: depth + 1)))
            }
            return .object(JSONObject(entries))
        }
    }

    @Test("write then parse gives the same value (seeded random values)", arguments: [1, 2, 3, 42, 1234] as [UInt64])
    func randomRoundTrip(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        for _ in 0..<400 {
            let value = Self.randomValue(&rng, depth: 0)
            let text = value.jsonText
            #expect(!text.utf8.contains { $0 < 0x20 }, "no raw control characters in \(text.debugDescription)")
            let parsed = try JSONParser.parse(text)
            #expect(parsed == value, "round trip of \(text)")
            #expect(parsed.jsonText == text, "writing is stable")
        }
    }

    @Test("every BMP-ish scalar and every control character round-trips as a string")
    func allScalarsRoundTrip() throws {
        var s = ""
        for v in UInt32(0)...0x2FF { s.unicodeScalars.append(Unicode.Scalar(v)!) }
        for v: UInt32 in [0xD7FF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF] { s.unicodeScalars.append(Unicode.Scalar(v)!) }
        let value = JSONValue.string(s)
        #expect(try JSONParser.parse(value.jsonText) == value)
    }
}
