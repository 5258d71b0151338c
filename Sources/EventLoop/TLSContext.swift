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

    private init(context: OpaquePointer, isServer: Bool) {
        self.context = context
        self.isServer = isServer
    }

    deinit { SSL_CTX_free(context) }

    /// A server context with a PEM certificate chain and private key (ECDSA or RSA).
    public static func server(certificateFile: String, privateKeyFile: String) throws(TLSError) -> TLSContext {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw TLSError("SSL_CTX_new") }
        let context = TLSContext(context: ctx, isServer: true)
        context.applyCommonSettings()
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
            // No server-side session cache, so TLS 1.3 tickets could not resume anything:
            // do not spend a handshake's time and a connection's memory minting them.
            _ = copenssl_ctx_set_session_cache_off(context)
            _ = SSL_CTX_set_num_tickets(context, 0)
        }
    }
}
