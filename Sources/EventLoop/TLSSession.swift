import COpenSSL

/// One TLS connection driven by the event loop: ciphertext read from the
/// socket goes in, plaintext comes out; plaintext to send goes in, ciphertext
/// is handed to `output` as libssl produces it. No blocking call, no thread.
final class TLSSession {
    private let ssl: OpaquePointer
    private let io: UnsafeMutablePointer<copenssl_bio_io>
    private let isServer: Bool
    private(set) var isHandshakeComplete = false

    enum ReadResult {
        case ok
        /// The peer sent close_notify.
        case closed
        case failed(TLSError)
    }

    /// `output` receives every ciphertext record; it must stay alive as long as the session.
    /// A client offers `resuming` (a session of an earlier connection) to skip a full handshake.
    init(context: TLSContext, output: SocketConnection, serverName: String? = nil,
         resuming: TLSResumableSession? = nil) throws(TLSError) {
        guard let ssl = SSL_new(context.context) else { throw TLSError("SSL_new") }
        self.ssl = ssl
        isServer = context.isServer
        io = .allocate(capacity: 1)
        io.initialize(to: copenssl_bio_io(
            input: nil, input_length: 0,
            owner: Unmanaged.passUnretained(output).toOpaque(),
            write: { owner, bytes, length in
                guard let owner, let bytes, length > 0 else { return 0 }
                let output = Unmanaged<SocketConnection>.fromOpaque(owner).takeUnretainedValue()
                output.tlsDidProduce(UnsafeRawBufferPointer(start: bytes, count: Int(length)))
                return length
            }))
        guard let bio = copenssl_bio_new(io) else {
            SSL_free(ssl)
            io.deallocate()
            throw TLSError("BIO_new")
        }
        SSL_set_bio(ssl, bio, bio)
        if context.isServer {
            SSL_set_accept_state(ssl)
        } else {
            if let serverName {
                if context.verifiesServer {
                    // The certificate must name the host: an IP address or a DNS name.
                    let param = SSL_get0_param(ssl)
                    if X509_VERIFY_PARAM_set1_ip_asc(param, serverName) != 1 {
                        _ = SSL_set1_host(ssl, serverName)
                        _ = copenssl_set_tlsext_host_name(ssl, serverName)
                    }
                } else {
                    _ = copenssl_set_tlsext_host_name(ssl, serverName)
                }
            }
            if let resuming { _ = SSL_set_session(ssl, resuming.session) }
            SSL_set_connect_state(ssl)
        }
    }

    deinit {
        // Freed without a close_notify exchanged, libssl would mark a client's session not
        // resumable (TLS 1.0's rule; TLS 1.1 and later dropped it): a client dropped by the
        // network, or dropping on purpose, must still resume on its next connection. A fatal
        // alert has already marked the session, and the server keeps no session cache.
        if !isServer { SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN) }
        SSL_free(ssl)
        io.deinitialize(count: 1)
        io.deallocate()
    }

    /// Starts a client handshake (sends ClientHello).
    func startHandshake() -> ReadResult {
        receive(UnsafeRawBufferPointer(start: nil, count: 0), into: UnsafeMutableRawBufferPointer(start: nil, count: 0)) { _ in }
    }

    /// Feeds ciphertext; plaintext is passed to `deliver` in pieces that fit `scratch`.
    func receive(
        _ ciphertext: UnsafeRawBufferPointer, into scratch: UnsafeMutableRawBufferPointer,
        deliver: (UnsafeRawBufferPointer) -> Void
    ) -> ReadResult {
        io.pointee.input = ciphertext.baseAddress?.assumingMemoryBound(to: UInt8.self)
        io.pointee.input_length = ciphertext.count
        defer {
            io.pointee.input = nil
            io.pointee.input_length = 0
        }
        if !isHandshakeComplete {
            let status = SSL_do_handshake(ssl)
            if status != 1 {
                switch SSL_get_error(ssl, status) {
                case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .ok
                default: return .failed(TLSError("TLS handshake failed"))
                }
            }
            isHandshakeComplete = true
        }
        guard let base = scratch.baseAddress, scratch.count > 0 else { return .ok }
        while true {
            let n = SSL_read(ssl, base, Int32(min(scratch.count, Int(Int32.max))))
            if n > 0 {
                deliver(UnsafeRawBufferPointer(start: base, count: Int(n)))
                continue
            }
            switch SSL_get_error(ssl, n) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .ok
            case SSL_ERROR_ZERO_RETURN: return .closed
            default: return .failed(TLSError("TLS read failed"))
            }
        }
    }

    /// Encrypts `plaintext`; the records go to the output.
    func send(_ plaintext: UnsafeRawBufferPointer) -> Bool {
        guard let base = plaintext.baseAddress, plaintext.count > 0 else { return true }
        var offset = 0
        while offset < plaintext.count {
            let n = SSL_write(ssl, base.advanced(by: offset), Int32(min(plaintext.count - offset, 1 << 20)))
            guard n > 0 else { return false }
            offset += Int(n)
        }
        return true
    }

    /// Queues close_notify.
    func shutdown() {
        if isHandshakeComplete { _ = SSL_shutdown(ssl) }
    }

    /// Whether the server resumed the session this client offered.
    var isResumed: Bool {
        SSL_session_reused(ssl) == 1
    }

    /// The session to offer on a later connection, once it can resume: in TLS 1.3 only
    /// after the server's ticket was read, which follows the handshake.
    func resumableSession() -> TLSResumableSession? {
        guard !isServer, isHandshakeComplete, let session = SSL_get1_session(ssl) else { return nil }
        guard SSL_SESSION_is_resumable(session) == 1 else {
            SSL_SESSION_free(session)
            return nil
        }
        return TLSResumableSession(taking: session)
    }

    var negotiatedVersion: String {
        String(cString: SSL_get_version(ssl))
    }
}
