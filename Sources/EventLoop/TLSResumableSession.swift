import COpenSSL

/// A client's TLS session, taken from a connection once the server's ticket arrived
/// (`SocketConnection.resumableTLSSession`), to offer on a later connection to the same
/// server (`SocketConnection.connect(…, session:)`): a server that still accepts the ticket
/// resumes the session, skipping the certificate signature and its verification. One
/// reference to an `SSL_SESSION`, released in deinit; libssl does not change a session
/// it is offered, so one value may be offered from any loop.
public final class TLSResumableSession: @unchecked Sendable {
    let session: OpaquePointer

    /// Takes over one reference to `session`.
    init(taking session: OpaquePointer) {
        self.session = session
    }

    deinit {
        SSL_SESSION_free(session)
    }
}
