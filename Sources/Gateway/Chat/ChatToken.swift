import Dispatch
import ChatCore
import Foundation
import JWTKit

/// The claims of a client token (PROTOCOL.md §1): `sub`, `exp`, optional `name` and `image`.
struct ChatTokenPayload: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim
    var name: String?
    var image: String?

    /// Signature only; `exp` is checked against the gateway's clock by `TokenAuthority`.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// What a valid token says.
struct VerifiedToken: Sendable, Equatable {
    var userID: UserID
    var expiresAt: Milliseconds
    var name: String?
    var image: String?
}

/// Signs and verifies HS256 client tokens with the configured secret (jwt-kit).
final class TokenAuthority: Sendable {
    private let keys: JWTKeyCollection
    private let clock: any ChatCore.Clock

    init(secret: String, clock: any ChatCore.Clock) async {
        keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        self.clock = clock
    }

    static func isValidUserID(_ id: String) -> Bool {
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

    /// The token's identity, or the §1 error: ERR_NOT_LOGGED_IN (missing, malformed,
    /// bad signature, bad `sub`) or ERR_TOKEN_EXPIRED.
    func verify(_ token: String) async -> Result<VerifiedToken, ChatError> {
        guard Self.hasExpectedHeader(token) else {
            return .failure(ChatError(.notLoggedIn, "token header must say alg HS256"))
        }
        let payload: ChatTokenPayload
        do {
            payload = try await keys.verify(token, as: ChatTokenPayload.self)
        } catch {
            return .failure(ChatError(.notLoggedIn, "invalid token"))
        }
        guard Self.isValidUserID(payload.sub.value) else {
            return .failure(ChatError(.notLoggedIn, "token sub must be 1-128 characters of [A-Za-z0-9_.@-]"))
        }
        // The profile claims are stored like any other string: no U+0000 (RequestDecoder's rule).
        if [payload.name, payload.image].contains(where: { $0?.utf8.contains(0) == true }) {
            return .failure(ChatError(.notLoggedIn, "token name and image must not contain U+0000"))
        }
        let expSeconds = payload.exp.value.timeIntervalSince1970
        // `exp` is in seconds (RFC 7519 §2); a value past year 9999 is not one (nanoseconds, say)
        // and would overflow the milliseconds the gateway keeps.
        guard expSeconds.isFinite, expSeconds <= Self.latestExpirySeconds else {
            return .failure(ChatError(.notLoggedIn, "token exp must be seconds since the epoch"))
        }
        let expiresAt = Milliseconds(expSeconds * 1000)
        guard expiresAt > clock.now() else { return .failure(ChatError(.tokenExpired, "token expired")) }
        return .success(VerifiedToken(userID: payload.sub.value, expiresAt: expiresAt, name: payload.name, image: payload.image))
    }

    /// 9999-12-31T23:59:59Z: the latest `exp` accepted, and the latest a token is issued for.
    static let latestExpirySeconds: Double = 253_402_300_799

    /// The longest lifetime `issue` grants: ten years.
    static let maximumTTLSeconds: Int64 = 315_360_000

    /// RFC 8725 §3.1: the header must name the one algorithm the gateway uses, exactly
    /// (`alg: none`, another algorithm, a different spelling or no `alg` at all is refused,
    /// whatever the signature), and must not ask for extensions it does not know (`crit`).
    static func hasExpectedHeader(_ token: String) -> Bool {
        guard let dot = token.utf8.firstIndex(of: UInt8(ascii: ".")),
              let bytes = Base64URL.decode(String(token[..<dot])),
              case .object(let header)? = try? JSONParser.parse(bytes, maxDepth: 4) else { return false }
        return header["alg"] == .string("HS256") && header["crit"] == nil
    }

    /// A token for `userID` valid for `ttlSeconds` (1 to `maximumTTLSeconds`) from now.
    func issue(userID: UserID, ttlSeconds: Int64, name: String? = nil) async throws -> (token: String, expiresAt: Milliseconds) {
        guard (1...Self.maximumTTLSeconds).contains(ttlSeconds) else {
            throw ChatError(.badRequest, "ttlSeconds must be 1 to \(Self.maximumTTLSeconds)")
        }
        let expiresAt = clock.now() + ttlSeconds * 1000
        let payload = ChatTokenPayload(
            sub: SubjectClaim(value: userID),
            exp: ExpirationClaim(value: Date(timeIntervalSince1970: Double(expiresAt) / 1000)),
            name: name, image: nil)
        return (try await keys.sign(payload), expiresAt)
    }
}

/// The wall clock.
struct SystemClock: ChatCore.Clock {
    func now() -> Milliseconds { Milliseconds(Date().timeIntervalSince1970 * 1000) }

    func monotonicNow() -> Milliseconds { Milliseconds(DispatchTime.now().uptimeNanoseconds / 1_000_000) }
}
