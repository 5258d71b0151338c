import Base64Coding
/// What a client token (PROTOCOL.md §1) says, checked from its header and claims alone:
/// the signature is checked apart, before (the gateway uses jwt-kit for it, and only for it),
/// so everything the token's sender controls is read here, by one parser, with every
/// number bounded before it is converted.
///
/// Claims: `sub` (a user id), `exp` (required), `iat` and `nbf` (optional), `name` and
/// `image` (optional strings). A numeric claim is a NumericDate (RFC 7519 §2): seconds since
/// the epoch, integer or fractional, which must fall in 1970-01-01 … 9999-12-31T23:59:59Z;
/// anything else (negative, past year 9999, not a number) is ERR_NOT_LOGGED_IN.
public struct TokenClaims: Sendable, Equatable {
    public var subject: UserID
    public var expiresAt: Milliseconds
    public var name: String?
    public var image: String?

    /// 9999-12-31T23:59:59Z: the latest NumericDate accepted, and the latest a token is issued for.
    public static let latestSeconds: Double = 253_402_300_799

    /// How far in the future `nbf` may be and still be accepted (clocks drift apart).
    public static let notBeforeLeewaySeconds: Int64 = 60

    /// The claims of `token` (`header.payload.signature`, base64url) at `now`, or the §1
    /// error: ERR_NOT_LOGGED_IN (malformed, a claim out of range, not valid yet) or
    /// ERR_TOKEN_EXPIRED. Does not look at the signature.
    public static func check(_ token: String, now: Milliseconds) -> Result<TokenClaims, ChatError> {
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let header = String(parts[0]), hasExpectedHeader(encoded: header) else {
            return .failure(ChatError(.notLoggedIn, "token header must say alg HS256"))
        }
        guard let payload = String(parts[1]).flatMap(Base64.decodeURL) else {
            return .failure(ChatError(.notLoggedIn, "invalid token"))
        }
        return check(payload: payload, now: now)
    }

    /// The claims in a token's payload (JSON), checked at `now`.
    public static func check(payload: [UInt8], now: Milliseconds) -> Result<TokenClaims, ChatError> {
        guard case .object(let claims)? = try? JSONParser.parse(payload, maxDepth: 16) else {
            return .failure(ChatError(.notLoggedIn, "token payload must be a JSON object"))
        }
        guard case .string(let subject)? = claims["sub"], isValidUserID(subject) else {
            return .failure(ChatError(.notLoggedIn, "token sub must be 1-128 characters of [A-Za-z0-9_.@-]"))
        }
        guard let exp = claims["exp"], exp != .null else {
            return .failure(ChatError(.notLoggedIn, "token exp is required"))
        }
        var optionalStrings: [String?] = []
        for key in ["name", "image"] {
            switch claims[key] {
            case nil, .null?: optionalStrings.append(nil)
            // Stored in the profile like any request string: no U+0000 (JSONFields.storable).
            case .string(let value)? where !value.utf8.contains(0): optionalStrings.append(value)
            case .string?: return .failure(ChatError(.notLoggedIn, "token \(key) must not contain U+0000"))
            default: return .failure(ChatError(.notLoggedIn, "token \(key) must be a string"))
            }
        }
        guard let expiresAt = milliseconds(exp) else {
            return .failure(ChatError(.notLoggedIn, "token exp must be seconds since the epoch, up to year 9999"))
        }
        var notBefore: Milliseconds?
        for key in ["iat", "nbf"] {
            guard let value = claims[key], value != .null else { continue }
            guard let time = milliseconds(value) else {
                return .failure(ChatError(.notLoggedIn, "token \(key) must be seconds since the epoch, up to year 9999"))
            }
            if key == "nbf" { notBefore = time }
        }
        if let notBefore, notBefore - notBeforeLeewaySeconds * 1000 > now {
            return .failure(ChatError(.notLoggedIn, "token not valid yet (nbf)"))
        }
        guard expiresAt > now else { return .failure(ChatError(.tokenExpired, "token expired")) }
        return .success(TokenClaims(subject: subject, expiresAt: expiresAt, name: optionalStrings[0], image: optionalStrings[1]))
    }

    /// A NumericDate as milliseconds, or nil when it is not a JSON number between 0 and
    /// `latestSeconds`. The range is checked on the `Double` before any conversion to an
    /// integer, so no value, however large or negative (or `1e400`, which reads as
    /// infinity), can overflow one.
    static func milliseconds(_ value: JSONValue) -> Milliseconds? {
        guard case .number(let lexeme) = value, let seconds = Double(lexeme),
              seconds.isFinite, seconds >= 0, seconds <= latestSeconds else { return nil }
        return Milliseconds((seconds * 1000).rounded(.down))
    }

    /// A user id: 1 to 128 characters of `[A-Za-z0-9_.@-]`.
    public static func isValidUserID(_ id: String) -> Bool {
        guard (1...128).contains(id.utf8.count) else { return false }
        return id.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "."),
                 UInt8(ascii: "@"), UInt8(ascii: "-"):
                return true
            default:
                return false
            }
        }
    }

    /// RFC 8725 §3.1: the header must name the one algorithm the gateway uses, exactly
    /// (`alg: none`, another algorithm, a different spelling or no `alg` at all is refused,
    /// whatever the signature), and must not ask for extensions it does not know (`crit`).
    public static func hasExpectedHeader(_ token: String) -> Bool {
        guard let dot = token.utf8.firstIndex(of: UInt8(ascii: ".")) else { return false }
        return hasExpectedHeader(encoded: String(token[..<dot]))
    }

    private static func hasExpectedHeader(encoded: String) -> Bool {
        guard let bytes = Base64.decodeURL(encoded),
              case .object(let header)? = try? JSONParser.parse(bytes, maxDepth: 4) else { return false }
        return header["alg"] == .string("HS256") && header["crit"] == nil
    }
}
