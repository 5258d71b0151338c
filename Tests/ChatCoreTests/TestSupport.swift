import Testing
@testable import ChatCore

/// The error code a throwing ChatCore call produced, or nil when it succeeded.
func errorCode<T>(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T) -> ErrorCode? {
    do {
        _ = try body()
        return nil
    } catch let error as ChatError {
        return error.code
    } catch {
        Issue.record("expected a ChatError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Parses JSON text, or nil when it is not valid JSON.
func parseJSON(_ text: String) -> JSONValue? {
    try? JSONParser.parse(text)
}

/// Parses bytes the code under test wrote; a test fails on the spot if they are not JSON.
func parseJSON(_ bytes: [UInt8]) -> JSONValue? {
    try? JSONParser.parse(bytes)
}

extension JSONValue {
    /// `value["key"]` for objects, nil otherwise.
    subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }

    /// The keys of an object in document order.
    var keys: [String]? {
        objectValue?.entries.map(\.key)
    }
}

/// A deterministic generator so random tests are reproducible (SplitMix64).
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
