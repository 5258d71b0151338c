// libFuzzer target: a client token's claims (ChatCore's TokenClaims, which the gateway's
// TokenAuthority.verify runs once jwt-kit has checked the signature), on claims JSON the
// fuzzer controls, signed HS256 with a test key as a careless or hostile backend holding
// the secret would sign it.
//
// Input: the token's payload (claims JSON), any bytes. The target builds
// `base64url({"alg":"HS256","typ":"JWT"}).base64url(input).base64url(HMAC-SHA256)` and checks
// it at several clock readings (a fixed 2026 date, 0, Int64.min, Int64.max).
//
// Invariants, at every reading of the clock:
// - never a trap (ASan and Swift's overflow and conversion checks make one a crash);
// - a refusal is ERR_NOT_LOGGED_IN or ERR_TOKEN_EXPIRED (401 at the upgrade), and expired
//   only when `exp` is a number within the accepted range;
// - a verified token's `expiresAt` is after now and no later than 9999-12-31T23:59:59Z,
//   its `sub` is a valid user id and is the payload's `sub`, `name`/`image` are the
//   payload's strings, and `nbf`, when present, is not after now plus the leeway;
// - the whole token and its payload alone give the same answer (at the fixed date), and the token's
//   signature verifies with the test key (the harness signs what the check reads).
// Build and run with `scripts/fuzz TokenClaimsFuzz`.
import Base64Coding
import ChatCore
import COpenSSL

private func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant violated: \(message())") }
}

private let key = Array("fuzz-secret-0123456789abcdef0123".utf8)
private let header = Base64.encodeURL(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
/// 2026-06-01T00:00:00Z.
private let fixedNow: Milliseconds = 1_780_272_000_000
private let clockReadings: [Milliseconds] = [fixedNow, 0, .min, .max]

private func hmacSHA256(_ input: [UInt8]) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: 32)
    var length: UInt32 = 0
    _ = HMAC(EVP_sha256(), key, Int32(key.count), input, input.count, &digest, &length)
    check(length == 32, "HMAC-SHA256 gave \(length) bytes")
    return digest
}

private func signed(_ payload: [UInt8]) -> String {
    let signingInput = header + "." + Base64.encodeURL(payload)
    return signingInput + "." + Base64.encodeURL(hmacSHA256(Array(signingInput.utf8)))
}

private func signatureVerifies(_ token: String) -> Bool {
    guard let dot = token.utf8.lastIndex(of: UInt8(ascii: ".")),
          let signature = Base64.decodeURL(String(token[token.index(after: dot)...])) else { return false }
    return signature == hmacSHA256(Array(token[..<dot].utf8))
}

/// The payload's claims as the check should read them, where the input is a JSON object.
private func claims(_ payload: [UInt8]) -> JSONObject? {
    guard case .object(let object)? = try? JSONParser.parse(payload, maxDepth: 16) else { return nil }
    return object
}

private func optionalString(_ value: JSONValue?) -> String? {
    if case .string(let text)? = value { return text }
    return nil
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let payload = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    let token = signed(payload)
    check(signatureVerifies(token), "the harness's own signature does not verify")
    let object = claims(payload)
    for now in clockReadings {
        let result = TokenClaims.check(token, now: now)
        if now == fixedNow {
            check(result == TokenClaims.check(payload: payload, now: now), "token and payload checks disagree")
        }
        switch result {
        case .success(let verified):
            guard let object else { fatalError("invariant violated: verified a payload that is not a JSON object") }
            check(verified.expiresAt > now, "verified at \(now) but expires at \(verified.expiresAt)")
            check(verified.expiresAt >= 0 && verified.expiresAt <= 253_402_300_799_000,
                  "expiresAt \(verified.expiresAt) outside 1970...9999")
            check(TokenClaims.isValidUserID(verified.subject), "invalid sub \(verified.subject) verified")
            check(object["sub"] == .string(verified.subject), "sub is not the payload's")
            check(verified.name == optionalString(object["name"]), "name is not the payload's")
            check(verified.image == optionalString(object["image"]), "image is not the payload's")
            if case .number(let lexeme)? = object["nbf"], let nbf = Double(lexeme) {
                check(nbf * 1000 <= Double(now) + Double(TokenClaims.notBeforeLeewaySeconds * 1000) + 1,
                      "nbf \(lexeme) is after now \(now)")
            }
        case .failure(let error):
            switch error.code {
            case .notLoggedIn:
                break
            case .tokenExpired:
                guard case .number(let lexeme)? = object?["exp"], let exp = Double(lexeme) else {
                    fatalError("invariant violated: expired without a numeric exp")
                }
                check(exp.isFinite && exp >= 0 && exp <= TokenClaims.latestSeconds, "expired with exp \(lexeme) out of range")
            default:
                fatalError("invariant violated: refused with \(error.code), not a 401-class error")
            }
        }
    }
    return 0
}
