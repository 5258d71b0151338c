@testable import ChatCore
import COpenSSL
import Foundation
import Testing
@testable import Gateway
import Base64Coding

/// Tokens an attacker or a careless backend could send: a correctly signed JWT with an
/// `exp` out of range, a header naming another algorithm, an admin `ttlSeconds` that
/// overflows. Each gets a clear error and the gateway keeps serving.
@Suite("Token hardening")
struct TokenHardeningTests {
    /// An HS256 signature over `header.payload` with `secret`, whatever the header says.
    static func sign(header: String, payload: String, secret: String) -> String {
        let signingInput = Base64.encodeURL(Array(header.utf8)) + "." + Base64.encodeURL(Array(payload.utf8))
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let key = Array(secret.utf8)
        let input = Array(signingInput.utf8)
        _ = HMAC(EVP_sha256(), key, Int32(key.count), input, input.count, &digest, &length)
        return signingInput + "." + Base64.encodeURL(Array(digest[..<Int(length)]))
    }

    private func expectRefused(_ gateway: TestGateway, _ token: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let response = try await gateway.upgrade(path: "/v1/ws?token=\(token)").response
        #expect(response.status == 401, "body: \(response.body)", sourceLocation: sourceLocation)
        #expect(response.body.contains("ERR_NOT_LOGGED_IN"), "body: \(response.body)", sourceLocation: sourceLocation)
    }

    private func expectServing(_ gateway: TestGateway, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let alice = try await gateway.connect("alice")
        #expect((try alice.ok("me")["user"] as? [String: Any])?["id"] as? String == "alice", sourceLocation: sourceLocation)
    }

    @Test("a signed token whose exp is not seconds (1e17, 1e19, 1e300): 401, and the gateway keeps serving")
    func expOutOfRange() async throws {
        let gateway = try await TestGateway.chat()
        for exp in ["100000000000000000", "1e17", "10000000000000000000", "1e300", "253402300800"] {
            let token = Self.sign(header: #"{"alg":"HS256","typ":"JWT"}"#, payload: #"{"sub":"alice","exp":\#(exp)}"#,
                                  secret: gateway.chat.auth.jwtSecret)
            try await expectRefused(gateway, token)
        }
        try await expectServing(gateway)
        // The last second of year 9999 is still a time.
        let latest = Self.sign(header: #"{"alg":"HS256","typ":"JWT"}"#, payload: #"{"sub":"alice","exp":253402300799}"#,
                               secret: gateway.chat.auth.jwtSecret)
        #expect(try await gateway.upgrade(path: "/v1/ws?token=\(latest)").response.status == 101)
    }

    /// NumericDates no clock reaches: past year 9999 either way, at 64-bit limits and beyond,
    /// as integers and as floats, and the finite `-1.8e308` and out-of-range `1e400` (infinity).
    static let extremeTimes = [
        "-1e17", "-100000000000000000", "-9.3e18", "-9300000000000000000", "-1e19", "-10000000000000000000",
        "-1e300", "-1.8e308", "-1.7976931348623157e308", "-1e400", "1e400", "1e19", "1.7976931348623157e308",
        "-9223372036854775808", "9223372036854775807", "-9223372036854775.808", "9223372036854775.807",
        "-1", "-0.001", "253402300800",
    ]

    @Test("exp, iat or nbf at any sign and magnitude (integer or float, signed): 401, and the gateway keeps serving")
    func numericClaimsOutOfRange() async throws {
        let gateway = try await TestGateway.chat()
        let header = #"{"alg":"HS256","typ":"JWT"}"#
        let valid = Int(Date().timeIntervalSince1970) + 3600
        for time in Self.extremeTimes {
            for payload in [#"{"sub":"alice","exp":\#(time)}"#,
                            #"{"sub":"alice","exp":\#(valid),"iat":\#(time)}"#,
                            #"{"sub":"alice","exp":\#(valid),"nbf":\#(time)}"#] {
                try await expectRefused(gateway, Self.sign(header: header, payload: payload, secret: gateway.chat.auth.jwtSecret))
            }
        }
        try await expectServing(gateway)
        // In range, integer or fractional, the same claims pass.
        let now = Int(Date().timeIntervalSince1970)
        let inRange = #"{"sub":"alice","exp":\#(valid).25,"iat":\#(now - 10).5,"nbf":\#(now - 10)}"#
        #expect(try await gateway.upgrade(path: "/v1/ws?token=\(Self.sign(header: header, payload: inRange, secret: gateway.chat.auth.jwtSecret))")
            .response.status == 101)
    }

    @Test("nbf more than a minute ahead: 401 (RFC 7519 §4.1.5); within the leeway it passes")
    func notBefore() async throws {
        let gateway = try await TestGateway.chat()
        let header = #"{"alg":"HS256","typ":"JWT"}"#
        let now = Int(Date().timeIntervalSince1970)
        let early = #"{"sub":"alice","exp":\#(now + 3600),"nbf":\#(now + 600)}"#
        try await expectRefused(gateway, Self.sign(header: header, payload: early, secret: gateway.chat.auth.jwtSecret))
        let skewed = #"{"sub":"alice","exp":\#(now + 3600),"nbf":\#(now + 5)}"#
        #expect(try await gateway.upgrade(path: "/v1/ws?token=\(Self.sign(header: header, payload: skewed, secret: gateway.chat.auth.jwtSecret))")
            .response.status == 101)
    }

    @Test("a header other than alg HS256 is refused, whatever the signature (RFC 8725 §3.1)")
    func algorithmPinned() async throws {
        let gateway = try await TestGateway.chat()
        let exp = Int(Date().timeIntervalSince1970) + 3600
        let payload = #"{"sub":"alice","exp":\#(exp)}"#
        for header in [#"{"alg":"none"}"#, #"{"alg":"RS256"}"#, #"{"alg":"ES256"}"#, #"{"alg":"hs256"}"#,
                       #"{"typ":"JWT"}"#, #"{"alg":null}"#, #"{"alg":["HS256"]}"#,
                       #"{"alg":"HS256","crit":["exp"]}"#, "[]", "not json"] {
            try await expectRefused(gateway, Self.sign(header: header, payload: payload, secret: gateway.chat.auth.jwtSecret))
        }
        let genuine = Self.sign(header: #"{"alg":"HS256","typ":"JWT"}"#, payload: payload, secret: gateway.chat.auth.jwtSecret)
        #expect(try await gateway.upgrade(path: "/v1/ws?token=\(genuine)").response.status == 101)
    }

    @Test("POST /v1/admin/tokens with a ttlSeconds that would overflow: 400, and the gateway keeps serving")
    func ttlOverflow() async throws {
        let gateway = try await TestGateway.chat()
        for ttl: Int64 in [Int64.max, 9_223_372_036_854_776, 315_360_001, 0, -1] {
            let reply = try await gateway.admin("POST", "/v1/admin/tokens", body: ["userId": "alice", "ttlSeconds": ttl])
            #expect(reply.status == 400, "ttl \(ttl): \(reply.body)")
            #expect(reply.errorCode == "ERR_BAD_REQUEST")
        }
        let issued = try await gateway.admin("POST", "/v1/admin/tokens", body: ["userId": "alice", "ttlSeconds": 315_360_000])
        #expect(issued.status == 200)
        try await expectServing(gateway)
    }
}
