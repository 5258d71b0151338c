import CZlib

/// Raw-deflate compressor for permessage-deflate messages. Each message is
/// compressed with a sync flush and its trailing 00 00 FF FF removed
/// (RFC 7692 §7.2.1).
public final class Deflater {
    private var stream: UnsafeMutablePointer<z_stream>?
    private let windowBits: Int32
    private let resetAfterMessage: Bool

    /// `resetAfterMessage` (no context takeover): every message starts from a
    /// fresh context, borrowed from the thread's `ThreadDeflateStreams`, so the
    /// connection holds no zlib state between messages.
    public init(windowBits: Int, resetAfterMessage: Bool) {
        self.windowBits = Int32(windowBits)
        self.resetAfterMessage = resetAfterMessage
    }

    deinit { release() }

    private func release() {
        guard let stream else { return }
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
        self.stream = nil
    }

    private func activeStream() -> UnsafeMutablePointer<z_stream>? {
        if resetAfterMessage { return ThreadDeflateStreams.current.stream(windowBits: windowBits) }
        if let stream { return stream }
        let fresh = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        fresh.initialize(to: z_stream())
        guard czlib_deflate_init2(fresh, Z_DEFAULT_COMPRESSION, -windowBits, 8) == Z_OK else {
            fresh.deallocate()
            return nil
        }
        stream = fresh
        return fresh
    }

    /// Appends the compressed form of `payload` to `output`; false if zlib failed.
    @discardableResult
    public func compress(_ payload: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) -> Bool {
        guard let stream = activeStream() else { return false }
        let start = output.count
        var input = payload.count
        stream.pointee.next_in = UnsafeMutablePointer(mutating: payload.baseAddress?.assumingMemoryBound(to: UInt8.self))
        stream.pointee.avail_in = UInt32(input)
        var ok = true
        while true {
            let room = Int(deflateBound(stream, UInt(input))) + 16
            let before = output.count
            output.append(contentsOf: repeatElement(0, count: room))
            let status = output.withUnsafeMutableBytes { buffer -> Int32 in
                stream.pointee.next_out = buffer.baseAddress!.advanced(by: before).assumingMemoryBound(to: UInt8.self)
                stream.pointee.avail_out = UInt32(room)
                return deflate(stream, Z_SYNC_FLUSH)
            }
            let unused = Int(stream.pointee.avail_out)
            output.removeLast(unused)
            if status != Z_OK && status != Z_BUF_ERROR { ok = false; break }
            if stream.pointee.avail_in == 0 && unused > 0 { break }
            input = Int(stream.pointee.avail_in)
        }
        stream.pointee.next_in = nil
        stream.pointee.next_out = nil
        if ok, output.count - start >= 4, output.suffix(4) == [0x00, 0x00, 0xFF, 0xFF] {
            output.removeLast(4)
        }
        // An empty message right after another sync flush makes zlib emit nothing
        // (Z_BUF_ERROR). The receiver appends 00 00 FF FF, which alone is not a
        // complete block and would corrupt its stream: send the empty stored
        // block's first byte, 0x00, as RFC 7692 §7.2.3.6 does.
        if ok, output.count == start { output.append(0x00) }
        if resetAfterMessage { deflateReset(stream) }
        if !ok { output.removeSubrange(start...) }
        return ok
    }

    public func compress(_ payload: [UInt8], appendingTo output: inout [UInt8]) -> Bool {
        payload.withUnsafeBytes { compress($0, appendingTo: &output) }
    }
}
