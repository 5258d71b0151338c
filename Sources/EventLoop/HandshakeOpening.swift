/// The first bytes an accepted connection sends, held unprocessed until they are enough to
/// start its opening handshake: a complete TLS record on a TLS listener (the ClientHello),
/// otherwise an HTTP request head up to its blank line.
///
/// A connection asks the loop's `HandshakeAdmission` for a turn only once its opening is
/// ready. One that sends nothing, part of a request line or part of a ClientHello waits
/// without a turn (until its handshake timeout) instead of holding one that a complete
/// request or ClientHello, arrived later, is waiting for: turns go by bytes ready, not by
/// arrival. Holding the bytes costs a copy, not a TLS computation or a parse.
///
/// Sans-IO: the connection appends what it reads and starts asking once `isReady`.
public struct HandshakeOpening: Sendable {
    public enum Expected: Sendable {
        /// A TLS record: 5 bytes of header (type, version, length), then the length's bytes.
        case tlsRecord
        /// An HTTP request head, ending with `\r\n\r\n`.
        case httpRequestHead
    }

    /// An HTTP head this long is ready whatever it holds: the request parser refuses a head
    /// over 8 KiB (431), and can do so now.
    public static let httpHeadLimit = 8192 + 4
    /// The largest TLS record (RFC 8446 §5.2: 2^14 + 256 bytes of ciphertext, RFC 5246's
    /// 2^14 + 2048 for older versions) with its header; a header announcing more is ready at
    /// once, and TLS refuses it.
    public static let tlsRecordLimit = 5 + 16_384 + 2_048

    public let expected: Expected
    /// Everything read so far, in order, to be handed to the handshake when its turn comes.
    public private(set) var bytes: [UInt8] = []
    /// Enough has arrived to start the handshake (complete, or certain to be refused).
    public private(set) var isReady = false
    /// Bytes already searched for the head's end.
    private var scanned = 0

    public init(expecting expected: Expected) {
        self.expected = expected
    }

    /// How many more bytes to read at most before the opening is ready: what it holds stays
    /// bounded (a few KiB per waiting connection), whatever the peer sends.
    public var readLimit: Int {
        let limit = expected == .tlsRecord ? Self.tlsRecordLimit : Self.httpHeadLimit
        return max(limit - bytes.count, 1)
    }

    /// Adds bytes read from the socket; returns `isReady`.
    @discardableResult
    public mutating func append(_ input: UnsafeRawBufferPointer) -> Bool {
        bytes.append(contentsOf: input)
        if !isReady { isReady = judge() }
        return isReady
    }

    private mutating func judge() -> Bool {
        switch expected {
        case .tlsRecord:
            guard bytes.count >= 5 else { return false }
            // Not a handshake record (plain HTTP to a TLS port, say) or longer than any record:
            // TLS refuses it from the header alone.
            let length = Int(bytes[3]) << 8 | Int(bytes[4])
            guard bytes[0] == 0x16, 5 + length <= Self.tlsRecordLimit else { return true }
            return bytes.count >= 5 + length
        case .httpRequestHead:
            if bytes.count >= Self.httpHeadLimit { return true }
            var index = max(scanned - 3, 0)
            scanned = bytes.count
            while index + 4 <= bytes.count {
                if bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
                    return true
                }
                index += 1
            }
            return false
        }
    }
}
