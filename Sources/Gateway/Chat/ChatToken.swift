import Dispatch
import ChatCore
import Foundation
import JWTKit

/// The claims `issue` signs (PROTOCOL.md §1).
struct ChatTokenPayload: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim
    var name: String?
    var image: String?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// What `verify` asks jwt-kit to decode: nothing. jwt-kit checks the signature only; the
/// claims are read by `TokenClaims` (ChatCore), which bounds every number before converting
/// it, rather than by `Date`-typed claims whose conversions to milliseconds could overflow.
private struct SignatureOnly: JWTPayload {
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

    static func isValidUserID(_ id: String) -> Bool { TokenClaims.isValidUserID(id) }

    /// The token's identity, or the §1 error: ERR_NOT_LOGGED_IN (missing, malformed,
    /// bad signature, bad `sub`) or ERR_TOKEN_EXPIRED.
    func verify(_ token: String) async -> Result<VerifiedToken, ChatError> {
        // The header first, so no other algorithm reaches jwt-kit; then the signature, so
        // only a signed token's claims are judged (an unsigned one is never "expired").
        guard TokenClaims.hasExpectedHeader(token) else {
            return .failure(ChatError(.notLoggedIn, "token header must say alg HS256"))
        }
        do {
            _ = try await keys.verify(token, as: SignatureOnly.self)
        } catch {
            return .failure(ChatError(.notLoggedIn, "invalid token"))
        }
        return TokenClaims.check(token, now: clock.now()).map { claims in
            VerifiedToken(userID: claims.subject, expiresAt: claims.expiresAt, name: claims.name, image: claims.image)
        }
    }

    /// The longest lifetime `issue` grants: ten years.
    static let maximumTTLSeconds: Int64 = 315_360_000

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
