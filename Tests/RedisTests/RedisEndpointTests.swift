import Testing
@testable import Redis

/// `cluster.redisUrl` forms; the password never shows in a description or an error.
@Suite struct RedisEndpointTests {
    @Test func everyForm() throws {
        #expect(try RedisEndpoint.parse("redis://127.0.0.1") == RedisEndpoint(host: "127.0.0.1"))
        #expect(try RedisEndpoint.parse("redis://127.0.0.1:6380/") == RedisEndpoint(host: "127.0.0.1", port: 6380))
        #expect(try RedisEndpoint.parse("redis://:s3cret@10.0.0.1:6379/2")
                == RedisEndpoint(host: "10.0.0.1", password: "s3cret", database: 2))
        #expect(try RedisEndpoint.parse("rediss://chat:p%40ss%3Aw%23rd@[::1]:6390/15")
                == RedisEndpoint(host: "::1", port: 6390, usesTLS: true, username: "chat", password: "p@ss:w#rd", database: 15))
        #expect(try RedisEndpoint.parse("redis://only-a-password@127.0.0.1") == RedisEndpoint(host: "127.0.0.1", password: "only-a-password"))
    }

    @Test(arguments: [
        "http://127.0.0.1", "redis://", "redis://127.0.0.1:0", "redis://127.0.0.1:65536", "redis://127.0.0.1:port",
        "redis://127.0.0.1/-1", "redis://127.0.0.1/db", "redis://127.0.0.1/99999999999", "redis://localhost:6379",
        "redis://127.0.0.1:1:2", "redis://127.0.0.1?password=x", "redis://user:@127.0.0.1", "redis://u:%zz@127.0.0.1",
    ])
    func badURLsAreRefused(_ url: String) {
        #expect(throws: RedisEndpoint.ParseError.self) { _ = try RedisEndpoint.parse(url) }
    }

    @Test func thePasswordStaysOutOfDescriptionsAndErrors() throws {
        let secret = "hunter2-Very-Secret"
        let endpoint = try RedisEndpoint.parse("rediss://chat:\(secret)@127.0.0.1:6390/3")
        #expect(endpoint.description == "rediss://chat:***@127.0.0.1:6390/3")
        for bad in ["redis://chat:\(secret)@localhost", "redis://chat:\(secret)@127.0.0.1:99999",
                    "redis://chat:\(secret)%G@127.0.0.1", "redis://chat:\(secret)@127.0.0.1/x?y"] {
            do {
                _ = try RedisEndpoint.parse(bad)
                Issue.record("\(bad.count) characters parsed")
            } catch {
                #expect(!"\(error)".contains(secret))
            }
        }
    }
}

/// The seed list of a Redis Cluster (`RedisEndpoint.parseList`).
@Suite struct RedisEndpointListTests {
    @Test func fullURLsAndBareAddresses() throws {
        #expect(try RedisEndpoint.parseList("redis://127.0.0.1:7000,redis://127.0.0.1:7001")
                == [RedisEndpoint(host: "127.0.0.1", port: 7000), RedisEndpoint(host: "127.0.0.1", port: 7001)])
        #expect(try RedisEndpoint.parseList("rediss://chat:p%2Cw@10.0.0.1:7000, 10.0.0.2:7001 ,[::1],10.0.0.1:7000")
                == [RedisEndpoint(host: "10.0.0.1", port: 7000, usesTLS: true, username: "chat", password: "p,w"),
                    RedisEndpoint(host: "10.0.0.2", port: 7001, usesTLS: true, username: "chat", password: "p,w"),
                    RedisEndpoint(host: "::1", port: 6379, usesTLS: true, username: "chat", password: "p,w")])
        #expect(try RedisEndpoint.parseList("redis://127.0.0.1") == [RedisEndpoint(host: "127.0.0.1")])
    }

    @Test(arguments: [
        "", ",", "127.0.0.1:7000", "redis://127.0.0.1:7000,", "redis://127.0.0.1:7000,,127.0.0.1:7001",
        "redis://127.0.0.1:7000/1", "redis://127.0.0.1:7000,rediss://127.0.0.1:7001", "redis://127.0.0.1,localhost:7001",
        "redis://127.0.0.1,u:p@127.0.0.1:7001", "redis://127.0.0.1,127.0.0.1:7001/2", "redis://127.0.0.1,127.0.0.1:0",
    ])
    func badListsAreRefused(_ list: String) {
        #expect(throws: RedisEndpoint.ParseError.self) { _ = try RedisEndpoint.parseList(list) }
    }

    @Test func thePasswordStaysOutOfErrors() {
        do {
            _ = try RedisEndpoint.parseList("redis://:hunter2secret@127.0.0.1:7000,hunter2secret")
            Issue.record("parsed")
        } catch {
            #expect(!"\(error)".contains("hunter2secret"))
        }
    }
}
