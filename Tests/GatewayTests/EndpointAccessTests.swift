import Testing
@testable import Gateway

/// Who may call what: the admin key is compared in constant time and must be exact;
/// `/metrics` is open on a loopback listener only.
@Suite("Endpoint access")
struct EndpointAccessTests {
    @Test("the admin key must match exactly: a prefix, an extension, another case or an empty bearer is refused")
    func adminKeyExact() async throws {
        let gateway = try await TestGateway.chat()
        let key = gateway.chat.admin.apiKey
        for wrong in [String(key.dropLast()), key + "x", key.uppercased(), "", " " + key, String(key.prefix(1))] {
            let reply = try await gateway.admin("POST", "/v1/admin/users", body: ["id": "eve"], key: wrong)
            #expect(reply.status == 401, "key \(wrong.count) bytes")
        }
        #expect(try await gateway.http("POST", "/v1/admin/users", body: ["id": "eve"], headers: ["Authorization: \(key)"]).status == 401)
        #expect(try await gateway.admin("POST", "/v1/admin/users", body: ["id": "eve"]).status == 200)
    }

    @Test("constant-time comparison: equal only for the same bytes and length")
    func constantTimeEqual() {
        let secret = Array("0123456789abcdef".utf8)
        #expect(BearerCredential.constantTimeEqual(secret, secret))
        #expect(!BearerCredential.constantTimeEqual(secret.dropLast(), secret))
        #expect(!BearerCredential.constantTimeEqual(secret + [0], secret))
        #expect(!BearerCredential.constantTimeEqual([UInt8](), secret))
        #expect(!BearerCredential.constantTimeEqual(Array("0123456789abcdeF".utf8), secret))
        #expect(BearerCredential.constantTimeEqual([UInt8](), []))
    }

    @Test("/metrics on a loopback listener needs no key")
    func metricsOpenOnLoopback() async throws {
        let gateway = try await TestGateway.chat()
        #expect(try await gateway.http("GET", "/metrics").status == 200)
    }

    @Test("/metrics on a non-loopback listener takes the admin key or metrics.apiKey, nothing else")
    func metricsKeyedElsewhere() async throws {
        let metricsKey = "metrics-key-0123456789abcdef"
        let gateway = try await TestGateway.chat { settings, chat in
            settings.host = "0.0.0.0"
            chat.metrics.apiKey = metricsKey
        }
        let anonymous = try await gateway.http("GET", "/metrics")
        #expect(anonymous.status == 401)
        #expect(!anonymous.body.contains("chat_"), "no metric in a refused answer")
        #expect(try await gateway.http("GET", "/metrics", headers: ["Authorization: Bearer wrong-key-0123456789abcdef"]).status == 401)
        let withMetricsKey = try await gateway.http("GET", "/metrics", headers: ["Authorization: Bearer \(metricsKey)"])
        #expect(withMetricsKey.status == 200)
        #expect(withMetricsKey.body.contains("chat_"))
        #expect(try await gateway.http("GET", "/metrics", headers: ["Authorization: Bearer \(gateway.chat.admin.apiKey)"]).status == 200)
        // The metrics key opens nothing else.
        #expect(try await gateway.admin("POST", "/v1/admin/users", body: ["id": "eve"], key: metricsKey).status == 401)
        #expect(try await gateway.http("GET", "/healthz").status == 200)
    }
}
