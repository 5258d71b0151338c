import COpenSSL

public struct TLSError: Error, CustomStringConvertible, Sendable {
    public var description: String

    init(_ what: String) {
        var detail = ""
        var buffer = [CChar](repeating: 0, count: 256)
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            ERR_error_string_n(code, &buffer, buffer.count)
            let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            detail += detail.isEmpty ? text : "; " + text
        }
        description = detail.isEmpty ? what : "\(what): \(detail)"
    }
}

/// An OpenSSL `SSL_CTX`: TLS 1.2 and 1.3 only, buffers released while idle.
public final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer
    public let isServer: Bool
    /// A client context that checks the server's chain and name (`verifyingClient`).
    public private(set) var verifiesServer = false
    /// The session ticket keys of a server that resumes sessions (`ticket_keys.c`).
    private var ticketKeys: OpaquePointer?

    private init(context: OpaquePointer, isServer: Bool) {
        self.context = context
        self.isServer = isServer
    }

    deinit {
        SSL_CTX_free(context)
        copenssl_ticket_keys_free(ticketKeys)
    }

    /// A server context with a PEM certificate chain and private key (ECDSA or RSA).
    ///
    /// With `ticketLifetimeSeconds`, each handshake gives the client one session ticket,
    /// with which its next connection resumes the session: no certificate signature, no
    /// key exchange. Tickets are encrypted under keys rotated by `rotateTicketKeys()`;
    /// those of the current and the previous key are accepted. Without it, no tickets:
    /// every handshake is a full one.
    public static func server(certificateFile: String, privateKeyFile: String,
                              ticketLifetimeSeconds: Int? = nil) throws(TLSError) -> TLSContext {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw TLSError("SSL_CTX_new") }
        let context = TLSContext(context: ctx, isServer: true)
        context.applyCommonSettings()
        if let ticketLifetimeSeconds {
            guard let keys = copenssl_ticket_keys_install(ctx, ticketLifetimeSeconds) else {
                throw TLSError("cannot set up session tickets")
            }
            context.ticketKeys = keys
        }
        guard SSL_CTX_use_certificate_chain_file(ctx, certificateFile) == 1 else {
            throw TLSError("cannot load certificate \(certificateFile)")
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, privateKeyFile, SSL_FILETYPE_PEM) == 1 else {
            throw TLSError("cannot load private key \(privateKeyFile)")
        }
        guard SSL_CTX_check_private_key(ctx) == 1 else {
            throw TLSError("private key \(privateKeyFile) does not match the certificate")
        }
        return context
    }

    /// Makes a new current ticket key; tickets under the key current until now stay valid
    /// (and are renewed when used), older ones no longer resume. False when tickets are off.
    @discardableResult
    public func rotateTicketKeys() -> Bool {
        guard let ticketKeys else { return false }
        return copenssl_ticket_keys_rotate(ticketKeys) == 1
    }

    /// A client context that verifies the server: its certificate chain against `caFile` (PEM)
    /// or, without one, the system's trust store, and its name against the host connected to
    /// (a DNS name or an IP address). A handshake that fails either check fails the connect.
    public static func verifyingClient(caFile: String? = nil) throws(TLSError) -> TLSContext {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw TLSError("SSL_CTX_new") }
        let context = TLSContext(context: ctx, isServer: false)
        context.applyCommonSettings()
        if let caFile {
            guard SSL_CTX_load_verify_locations(ctx, caFile, nil) == 1 else { throw TLSError("cannot load CA file \(caFile)") }
        } else {
            guard SSL_CTX_set_default_verify_paths(ctx) == 1 else { throw TLSError("no system trust store") }
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        context.verifiesServer = true
        return context
    }

    /// A client context that does not verify the server (tests and load tests
    /// against self-signed development certificates).
    public static func insecureClient() throws(TLSError) -> TLSContext {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw TLSError("SSL_CTX_new") }
        let context = TLSContext(context: ctx, isServer: false)
        context.applyCommonSettings()
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
        return context
    }

    private func applyCommonSettings() {
        _ = copenssl_ctx_set_min_proto_version(context, TLS1_2_VERSION)
        _ = copenssl_ctx_set_max_proto_version(context, TLS1_3_VERSION)
        _ = copenssl_ctx_set_mode(context, Int(SSL_MODE_RELEASE_BUFFERS))
        copenssl_ctx_set_hardening_options(context)
        if isServer {
            // No server-side session cache: sessions resume only from tickets, which carry
            // their own state, and only once `server(ticketLifetimeSeconds:)` turned them on.
            _ = copenssl_ctx_set_session_cache_off(context)
            _ = SSL_CTX_set_num_tickets(context, 0)
        }
    }
}
