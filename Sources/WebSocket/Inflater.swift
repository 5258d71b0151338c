import CZlib

/// Raw-deflate decompressor for permessage-deflate messages, with a hard bound
/// on the inflated size so a small compressed message cannot expand past the
/// message size limit.
final class Inflater {
    private var stream: UnsafeMutablePointer<z_stream>?
    let resetAfterMessage: Bool

    /// `resetAfterMessage`: the peer does not take context over (`*_no_context_takeover`),
    /// so the zlib state is freed after each message and an idle connection holds none.
    init(resetAfterMessage: Bool) {
        self.resetAfterMessage = resetAfterMessage
    }

    deinit { release() }

    private func release() {
        guard let stream else { return }
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
        self.stream = nil
    }

    private func activeStream() throws(WebSocketError) -> UnsafeMutablePointer<z_stream> {
        if let stream { return stream }
        let fresh = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        fresh.initialize(to: z_stream())
        guard czlib_inflate_init2(fresh, -15) == Z_OK else {
            fresh.deallocate()
            throw WebSocketError(.internalError, "inflate init failed")
        }
        stream = fresh
        return fresh
    }

    /// Inflates `input`, appending to `output`; fails with 1009 once `output` would pass `limit`.
    func inflate(_ input: [UInt8], appendingTo output: inout [UInt8], limit: Int) throws(WebSocketError) {
        var failure: WebSocketError?
        input.withUnsafeBytes { bytes in
            do throws(WebSocketError) { try inflate(bytes, appendingTo: &output, limit: limit) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Inflates `input`, appending to `output`; fails with 1009 once `output` would pass `limit`.
    func inflate(_ input: UnsafeRawBufferPointer, appendingTo output: inout [UInt8], limit: Int) throws(WebSocketError) {
        guard input.count > 0, let base = input.baseAddress else { return }
        let stream = try activeStream()
        stream.pointee.next_in = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self))
        stream.pointee.avail_in = UInt32(input.count)
        defer {
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
        }
        while true {
            // One byte past the limit at most, so crossing it is seen; no `limit + 1`,
            // which would overflow for a limit of Int.max.
            let room = max(min(limit - output.count, max(input.count * 4, 4096) - 1), 0) + 1
            let start = output.count
            output.append(contentsOf: repeatElement(0, count: room))
            let status = output.withUnsafeMutableBytes { buffer -> Int32 in
                stream.pointee.next_out = buffer.baseAddress!.advanced(by: start).assumingMemoryBound(to: UInt8.self)
                stream.pointee.avail_out = UInt32(room)
                return CZlib.inflate(stream, Z_SYNC_FLUSH)
            }
            let unused = Int(stream.pointee.avail_out)
            stream.pointee.next_out = nil
            output.removeLast(unused)
            if output.count > limit {
                throw WebSocketError(.messageTooBig, "inflated message over the limit")
            }
            switch status {
            case Z_OK, Z_BUF_ERROR:
                if stream.pointee.avail_in == 0 && unused > 0 { return }
                if status == Z_BUF_ERROR && unused > 0 { return }
            case Z_STREAM_END:
                // A final deflate block: whatever follows starts a fresh stream.
                inflateReset(stream)
                if stream.pointee.avail_in == 0 { return }
            default:
                throw WebSocketError(.invalidPayload, "invalid compressed data")
            }
        }
    }

    /// Ends a message: feeds the stripped sync-flush tail (RFC 7692 §7.2.2).
    func finishMessage(appendingTo output: inout [UInt8], limit: Int) throws(WebSocketError) {
        let tail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]
        var failure: WebSocketError?
        tail.withUnsafeBytes { bytes in
            do throws(WebSocketError) { try inflate(bytes, appendingTo: &output, limit: limit) } catch { failure = error }
        }
        if let failure { throw failure }
        if resetAfterMessage { release() }
    }
}
