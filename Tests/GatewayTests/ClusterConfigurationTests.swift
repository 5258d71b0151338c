import Foundation
import Testing
import ChatCore
@testable import Gateway

/// The cluster keys of PROTOCOL.md §12: `cluster.redisUrl` forms, `cluster.redisCaFile`,
/// `cluster.commandTimeoutMs`, `cluster.busSecret`; wrong types and values stop start-up
/// (exit 2) naming the key, and no error repeats a password.
@Suite struct ClusterConfigurationTests {
    private static let base = [
        "CHAT_GATEWAY_STORAGE_BACKEND": "postgres",
        "CHAT_GATEWAY_STORAGE_POSTGRESURL": "postgres://chat@127.0.0.1:5432/chat",
    ]

    private func load(_ environment: [String: String]) throws(ConfigurationError) -> GatewayConfiguration {
        try GatewayConfiguration.load(filePath: nil, environment: Self.base.merging(environment) { $1 })
    }

    private func error(_ environment: [String: String]) -> ConfigurationError? {
        do {
            _ = try load(environment)
            return nil
        } catch {
            return error
        }
    }

    @Test func defaultsAndEveryURLForm() throws {
        #expect(GatewayConfiguration().cluster.commandTimeoutMs == 2_000)
        #expect(GatewayConfiguration().cluster.busSecret == nil)
        for url in ["redis://127.0.0.1:6379", "redis://:pw@127.0.0.1/2", "redis://chat:pw@127.0.0.1:6380/15",
                    "rediss://:pw@127.0.0.1:6390", "rediss://[::1]:6390/1"] {
            let configuration = try load(["CHAT_GATEWAY_CLUSTER_REDISURL": url])
            #expect(configuration.cluster.redisURL == url)
        }
        let file = NSTemporaryDirectory() + "cluster-ca-\(UUID().uuidString).pem"
        try Data("not checked here".utf8).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let configuration = try load([
            "CHAT_GATEWAY_CLUSTER_REDISURL": "rediss://127.0.0.1:6390", "CHAT_GATEWAY_CLUSTER_REDISCAFILE": file,
            "CHAT_GATEWAY_CLUSTER_COMMANDTIMEOUTMS": "750",
            "CHAT_GATEWAY_CLUSTER_BUSSECRET": "0123456789abcdef0123456789abcdef",
        ])
        #expect(configuration.cluster.redisCAFile == file)
        #expect(configuration.cluster.commandTimeoutMs == 750)
        #expect(configuration.cluster.busSecret == "0123456789abcdef0123456789abcdef")
        #expect(ChatEngine.Settings(configuration).sharedUserRate, "a Redis URL shares the per-user rate across nodes")
    }

    @Test(arguments: [
        (#"{"cluster": {"commandTimeoutMs": "2000"}}"#, "cluster.commandTimeoutMs", "an integer"),
        (#"{"cluster": {"commandTimeoutMs": 1.5}}"#, "cluster.commandTimeoutMs", "an integer"),
        (#"{"cluster": {"busSecret": 42}}"#, "cluster.busSecret", "a string"),
        (#"{"cluster": {"redisCaFile": true}}"#, "cluster.redisCaFile", "a string"),
    ])
    func wrongTypes(json: String, key: String, expected: String) throws {
        let path = NSTemporaryDirectory() + "cluster-config-\(UUID().uuidString).json"
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: ConfigurationError.wrongType(key: key, expected: expected, source: path)) {
            _ = try GatewayConfiguration.load(filePath: path, environment: [:])
        }
    }

    @Test func anUnknownClusterKeyIsRefused() throws {
        let path = NSTemporaryDirectory() + "cluster-config-\(UUID().uuidString).json"
        try Data(#"{"cluster": {"commandTimeout": 5}}"#.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: ConfigurationError.unknownKey(key: "cluster.commandTimeout", file: path)) {
            _ = try GatewayConfiguration.load(filePath: path, environment: [:])
        }
    }

    @Test(arguments: [
        (["CHAT_GATEWAY_CLUSTER_COMMANDTIMEOUTMS": "0"], "cluster.commandTimeoutMs"),
        (["CHAT_GATEWAY_CLUSTER_COMMANDTIMEOUTMS": "60001"], "cluster.commandTimeoutMs"),
        (["CHAT_GATEWAY_CLUSTER_BUSSECRET": "short"], "cluster.busSecret"),
        (["CHAT_GATEWAY_CLUSTER_REDISURL": "redis://127.0.0.1", "CHAT_GATEWAY_CLUSTER_REDISCAFILE": "/etc/hostname"],
         "cluster.redisCaFile"),
        (["CHAT_GATEWAY_CLUSTER_REDISURL": "rediss://127.0.0.1", "CHAT_GATEWAY_CLUSTER_REDISCAFILE": "/no/such/ca.pem"],
         "cluster.redisCaFile"),
        (["CHAT_GATEWAY_CLUSTER_REDISURL": "redis://redis.internal:6379"], "cluster.redisUrl"),
        (["CHAT_GATEWAY_CLUSTER_REDISURL": "redis://127.0.0.1:7000,"], "cluster.redisUrl"),
        (["CHAT_GATEWAY_CLUSTER_REDISURL": "redis://127.0.0.1:7000/1,127.0.0.1:7001"], "cluster.redisUrl"),
        (["CHAT_GATEWAY_CLUSTER_REDISURL": "redis://127.0.0.1:7000,rediss://127.0.0.1:7001"], "cluster.redisUrl"),
    ])
    func badValues(environment: [String: String], key: String) {
        #expect(error(environment)?.key == key, "\(String(describing: error(environment)))")
    }

    @Test func seedsOfARedisClusterAreTakenAndABadListIsRefusedWithoutItsPassword() throws {
        for url in ["redis://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002", "redis://:pw@127.0.0.1:7000,127.0.0.1:7001",
                    "rediss://127.0.0.1:7000,rediss://127.0.0.1:7001"] {
            #expect(try load(["CHAT_GATEWAY_CLUSTER_REDISURL": url]).cluster.redisURL == url)
        }
        let refused = error(["CHAT_GATEWAY_CLUSTER_REDISURL": "redis://:pw@127.0.0.1:7000/3,127.0.0.1:7001,127.0.0.1:7002"])
        #expect(refused?.key == "cluster.redisUrl")
        #expect("\(String(describing: refused))".contains("database"))
        #expect(!"\(String(describing: refused))".contains("pw"))
    }

    @Test func aBadRedisURLIsRefusedWithoutItsPassword() {
        let secret = "Pa55-word-never-logged"
        for url in ["redis://chat:\(secret)@redis.internal:6379", "redis://:\(secret)@127.0.0.1:70000",
                    "rediss://:\(secret)%@127.0.0.1", "http://:\(secret)@127.0.0.1"] {
            let refused = error(["CHAT_GATEWAY_CLUSTER_REDISURL": url])
            #expect(refused?.key == "cluster.redisUrl")
            #expect(!"\(String(describing: refused))".contains(secret))
        }
    }
}
