import Testing
@testable import Redis

/// MOVED and ASK error replies; anything not exactly one is passed on as an error.
@Suite struct RedisRedirectTests {
    @Test func movedAndAsk() {
        #expect(RedisRedirect(.error("MOVED 3999 127.0.0.1:6381"))
                == RedisRedirect(kind: .moved, slot: 3999, host: "127.0.0.1", port: 6381))
        #expect(RedisRedirect(.error("ASK 16383 10.0.0.7:7002"))
                == RedisRedirect(kind: .ask, slot: 16383, host: "10.0.0.7", port: 7002))
        #expect(RedisRedirect(.error("MOVED 0 ::1:7000")) == RedisRedirect(kind: .moved, slot: 0, host: "::1", port: 7000))
    }

    @Test func anEmptyHostIsTheNodeThatAnswered() {
        let redirect = RedisRedirect(.error("MOVED 12 :7005"))
        #expect(redirect == RedisRedirect(kind: .moved, slot: 12, host: nil, port: 7005))
        let sender = RedisClusterAddress(host: "127.0.0.1", port: 7001)
        #expect(redirect?.address(sender: sender) == RedisClusterAddress(host: "127.0.0.1", port: 7005))
    }

    @Test(arguments: [
        "MOVED", "MOVED 1", "MOVED 1 127.0.0.1", "MOVED 16384 127.0.0.1:7000", "MOVED -1 127.0.0.1:7000",
        "MOVED 1 127.0.0.1:0", "MOVED 1 127.0.0.1:65536", "MOVED 1 127.0.0.1:99999999999999999999",
        "MOVED 1 redis.example:7000", "MOVED 1 127.0.0.1:7000 extra", "MOVED  1 127.0.0.1:7000", "moved 1 127.0.0.1:7000",
        "ERR unknown command", "ASK x 127.0.0.1:7000", "ASK 1 127.0.0.1:+7000", "CLUSTERDOWN Hash slot not served",
    ])
    func otherErrorsAreNoRedirect(_ message: String) {
        #expect(RedisRedirect(.error(message)) == nil)
    }

    @Test func onlyErrorsRedirect() {
        #expect(RedisRedirect(.status("MOVED 1 127.0.0.1:7000")) == nil)
        #expect(RedisRedirect(.string(Array("MOVED 1 127.0.0.1:7000".utf8))) == nil)
    }
}
