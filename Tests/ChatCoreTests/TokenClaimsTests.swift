import ChatCore
import Testing
import Base64Coding

/// `TokenClaims`: every numeric claim is bounded before it is converted, so no value a
/// signed token carries can trap; out of range is ERR_NOT_LOGGED_IN.
@Suite("Token claims")
struct TokenClaimsTests {
    /// 2026-06-01T00:00:00Z.
    static let now: Milliseconds = 1_780_272_000_000

    static func check(_ json: String, now: Milliseconds = now) -> Result<TokenClaims, ChatError> {
        TokenClaims.check(payload: Array(json.utf8), now: now)
    }

    static let extremes = [
        "-1e17", "-9.3e18", "-9300000000000000000", "-1e19", "-1e300", "-1.8e308", "-1e400", "1e400", "1e19",
        "1.7976931348623157e308", "-9223372036854775808", "9223372036854775807", "9223372036854775808",
        "-1", "-4.9e-324", "253402300800", "253402300799.9999999",
    ]

    @Test("exp, iat and nbf out of range, integer or float, at any sign: ERR_NOT_LOGGED_IN")
    func extremes() {
        for time in Self.extremes {
            for json in [#"{"sub":"a","exp":\#(time)}"#, #"{"sub":"a","exp":1900000000,"iat":\#(time)}"#,
                         #"{"sub":"a","exp":1900000000,"nbf":\#(time)}"#] {
                for now in [Self.now, 0, .min, .max] {
                    guard case .failure(let error) = Self.check(json, now: now) else {
                        Issue.record("accepted \(json) at \(now)")
                        continue
                    }
                    #expect(error.code == .notLoggedIn, "\(json): \(error)")
                }
            }
        }
    }

    @Test("in range: integer and fractional seconds, to the last second of 9999; expired is ERR_TOKEN_EXPIRED")
    func inRange() throws {
        #expect(try Self.check(#"{"sub":"a","exp":1900000000}"#).get().expiresAt == 1_900_000_000_000)
        #expect(try Self.check(#"{"sub":"a","exp":1900000000.2509}"#).get().expiresAt == 1_900_000_000_250)
        #expect(try Self.check(#"{"sub":"a","exp":253402300799}"#).get().expiresAt == 253_402_300_799_000)
        let all = try Self.check(#"{"sub":"a","exp":19e8,"iat":0,"nbf":1.78e9,"name":"A","image":null}"#).get()
        #expect(all.subject == "a" && all.expiresAt == 1_900_000_000_000 && all.name == "A" && all.image == nil)
        for json in [#"{"sub":"a","exp":0}"#, #"{"sub":"a","exp":1780272000}"#, #"{"sub":"a","exp":1e3}"#] {
            #expect(throws: ChatError(.tokenExpired, "token expired")) { try Self.check(json).get() }
        }
    }

    @Test("malformed claims: ERR_NOT_LOGGED_IN")
    func malformed() {
        for json in [#"[]"#, #"{"exp":1900000000}"#, #"{"sub":"","exp":1900000000}"#, #"{"sub":"a b","exp":1900000000}"#,
                     #"{"sub":7,"exp":1900000000}"#, #"{"sub":"a"}"#, #"{"sub":"a","exp":null}"#,
                     #"{"sub":"a","exp":"1900000000"}"#, #"{"sub":"a","exp":[1900000000]}"#,
                     #"{"sub":"a","exp":1900000000,"name":1}"#, #"{"sub":"a","exp":1900000000,"iat":true}"#,
                     #"{"sub":"a","exp":1900000000,"nbf":1790000000}"#, "not json", ""] {
            guard case .failure(let error) = Self.check(json) else {
                Issue.record("accepted \(json)")
                continue
            }
            #expect(error.code == .notLoggedIn, "\(json): \(error)")
        }
    }

    @Test("the whole token: header pinned to HS256, three parts, base64url payload")
    func token() throws {
        let header = Base64.encodeURL(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let payload = Base64.encodeURL(Array(#"{"sub":"a","exp":1900000000}"#.utf8))
        #expect(try TokenClaims.check("\(header).\(payload).sig", now: Self.now).get().subject == "a")
        let none = Base64.encodeURL(Array(#"{"alg":"none"}"#.utf8))
        for token in ["\(none).\(payload).sig", "\(header).\(payload)", "\(header).\(payload).s.t", "\(header).%%%.sig", ""] {
            guard case .failure(let error) = TokenClaims.check(token, now: Self.now) else {
                Issue.record("accepted \(token)")
                continue
            }
            #expect(error.code == .notLoggedIn)
        }
    }
}
