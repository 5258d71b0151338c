import Testing
@testable import Redis

/// RESP2 replies read from bytes as a server (or anyone in its place) sends them: every
/// length and number checked before it is used, a broken reply an error, never a trap.
@Suite struct RESPReaderTests {
    private func replies(_ text: String, limits: RESPReader.Limits = RESPReader.Limits()) throws -> [RedisReply] {
        var reader = RESPReader(limits: limits)
        reader.append(Array(text.utf8))
        var result: [RedisReply] = []
        while let reply = try reader.next() { result.append(reply) }
        return result
    }

    @Test func readsEveryType() throws {
        let text = "+OK\r\n-ERR no\r\n:-42\r\n$3\r\na\0b\r\n$-1\r\n*2\r\n$7\r\nmessage\r\n*0\r\n*-1\r\n$0\r\n\r\n"
        #expect(try replies(text) == [
            .status("OK"), .error("ERR no"), .integer(-42), .string([97, 0, 98]), .null,
            .array([.string(Array("message".utf8)), .array([])]), .null, .string([]),
        ])
    }

    /// What Redis sends for a Lua number it cannot hold (`math.ceil(inf)`) is a valid reply.
    @Test func theWholeInt64RangeReads() throws {
        #expect(try replies(":-9223372036854775808\r\n:9223372036854775807\r\n:-0\r\n")
                == [.integer(.min), .integer(.max), .integer(0)])
        #expect(throws: RESPReader.Failure.self) { _ = try replies(":-9223372036854775809\r\n") }
    }

    @Test func aReplySplitAtEveryByteComesOutWhole() throws {
        let bytes = Array("*3\r\n$7\r\nmessage\r\n$8\r\nchat:bus\r\n$5\r\nhello\r\n:7\r\n".utf8)
        var reader = RESPReader()
        var result: [RedisReply] = []
        for byte in bytes {
            reader.append([byte])
            while let reply = try reader.next() { result.append(reply) }
        }
        #expect(result == [.array([.string(Array("message".utf8)), .string(Array("chat:bus".utf8)),
                                   .string(Array("hello".utf8))]), .integer(7)])
    }

    @Test(arguments: [
        ":99999999999999999999\r\n",          // past Int64
        ":9223372036854775808\r\n",           // Int64.max + 1
        ":12a\r\n", ":\r\n", ":-\r\n",
        "$-2\r\n", "$99999999999999999999\r\n", "$9223372036854775807\r\n", // lengths that must not size anything
        "*-5\r\n", "*9223372036854775807\r\n",
        "$3\r\nabcd\r\n",                     // no CRLF where the length says
        "?what\r\n",                          // unknown type
        "+OK\rX\n",                           // CR without LF
    ])
    func brokenRepliesAreErrors(_ text: String) {
        #expect(throws: RESPReader.Failure.self) { _ = try replies(text) }
    }

    @Test func limitsAreCheckedBeforeAnythingIsAllocated() {
        let limits = RESPReader.Limits(maxBulkBytes: 16, maxArrayElements: 4, maxDepth: 2, maxLineBytes: 32)
        #expect(throws: RESPReader.Failure.self) { _ = try replies("$17\r\n", limits: limits) }
        #expect(throws: RESPReader.Failure.self) { _ = try replies("*5\r\n", limits: limits) }
        #expect(throws: RESPReader.Failure.self) { _ = try replies("*1\r\n*1\r\n*1\r\n:1\r\n", limits: limits) }
        #expect(throws: RESPReader.Failure.self) { _ = try replies("+" + String(repeating: "x", count: 40), limits: limits) }
        #expect((try? replies("*1\r\n*1\r\n:1\r\n", limits: limits)) == [.array([.array([.integer(1)])])])
    }
}
