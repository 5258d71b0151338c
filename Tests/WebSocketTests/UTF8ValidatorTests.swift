import Testing
@testable import WebSocket

private func isValid(_ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { UTF8Validator.isValid($0) }
}

/// Feeds `bytes` split at `cut`; the result must not depend on where reads end.
private func isValidSplit(_ bytes: [UInt8], at cut: Int) -> Bool {
    var validator = UTF8Validator()
    guard validator.validate(bytes[..<cut]), validator.validate(bytes[cut...]) else { return false }
    return validator.isAtCharacterBoundary
}

@Suite struct UTF8ValidatorTests {
    @Test(arguments: [
        [UInt8](), Array("plain ASCII text that is longer than eight bytes".utf8),
        Array("κόσμε".utf8), Array("日本語のテキスト".utf8), Array("emoji 🎉👍🏽 mix".utf8),
        [0x00], [0x7F], [0xC2, 0x80], [0xDF, 0xBF], [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF],
        [0xEE, 0x80, 0x80], [0xEF, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],
    ])
    func validSequences(bytes: [UInt8]) {
        #expect(isValid(bytes))
        for cut in 0...bytes.count { #expect(isValidSplit(bytes, at: cut)) }
    }

    @Test(arguments: [
        [UInt8(0xC0), 0x80], [0xC1, 0xBF],  // overlong 2-byte
        [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF],  // overlong 3-byte
        [0xF0, 0x80, 0x80, 0x80], [0xF0, 0x8F, 0xBF, 0xBF],  // overlong 4-byte
    ])
    func overlongsAreInvalid(bytes: [UInt8]) {
        #expect(!isValid(bytes))
        #expect(!isValid(Array("abcdefghij".utf8) + bytes))
    }

    @Test(arguments: [[UInt8(0xED), 0xA0, 0x80], [0xED, 0xAF, 0xBF], [0xED, 0xB0, 0x80], [0xED, 0xBF, 0xBF]])
    func surrogatesAreInvalid(bytes: [UInt8]) {
        #expect(!isValid(bytes))
    }

    @Test(arguments: [[UInt8(0xF4), 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xF7, 0xBF, 0xBF, 0xBF], [0xF8], [0xFF], [0xFE]])
    func aboveU10FFFFIsInvalid(bytes: [UInt8]) {
        #expect(!isValid(bytes))
    }

    @Test(arguments: [[UInt8(0x80)], [0xBF], [0x41, 0x80], [0xC2, 0x41], [0xE1, 0x80, 0x41], [0xF1, 0x80, 0x80, 0xC0]])
    func strayAndBrokenContinuationBytes(bytes: [UInt8]) {
        #expect(!isValid(bytes))
    }

    @Test(arguments: [[UInt8(0xC2)], [0xE2, 0x82], [0xF0, 0x9F, 0x8E], Array("ok".utf8) + [0xE2]])
    func truncatedSequences(bytes: [UInt8]) {
        var validator = UTF8Validator()
        // A prefix of a valid sequence is not an error yet...
        let prefixValid = bytes.withUnsafeBytes { validator.validate($0) }
        #expect(prefixValid)
        // ...but it does not end at a character boundary.
        #expect(!validator.isAtCharacterBoundary)
        #expect(!isValid(bytes))
    }

    @Test func failsOnTheFirstBadByteNotAtTheEnd() {
        var validator = UTF8Validator()
        let prefixValid = validator.validate(Array("valid prefix".utf8))
        let badByteValid = validator.validate([0xC0])
        #expect(prefixValid)
        #expect(!badByteValid)
    }

    @Test func errorAfterTheAsciiFastPath() {
        // The invalid byte sits in the middle of an 8-byte word.
        for position in 0..<24 {
            var bytes = [UInt8](repeating: 0x61, count: 24)
            bytes[position] = 0xFF
            #expect(!isValid(bytes), "position \(position)")
        }
    }

    @Test(arguments: [UInt64(1), 2, 3, 4])
    func agreesWithTheStandardLibraryOnRandomInput(seed: UInt64) {
        let alphabet: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
                                 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
        var random = SeededRandom(seed: seed)
        for _ in 0..<3000 {
            let length = Int.random(in: 0...10, using: &random)
            let bytes = (0..<length).map { _ in alphabet.randomElement(using: &random) ?? 0 }
            let expected = String(validating: bytes, as: UTF8.self) != nil
            #expect(isValid(bytes) == expected, "\(bytes)")
            let cut = Int.random(in: 0...length, using: &random)
            #expect(isValidSplit(bytes, at: cut) == expected, "\(bytes) cut at \(cut)")
        }
    }
}
