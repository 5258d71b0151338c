// libFuzzer target: the permessage-deflate Inflater (internal to WebSocket,
// hence `@testable import`; scripts/fuzz builds the module with -enable-testing)
// and the Deflater.
//
// Input layout: byte 0 holds flags, byte 1 and byte 2 pick split points,
// bytes 3... are raw deflate data (or, for the round trip, a payload).
//   bits 0-2  the output limit: 0, 1, 64, 1024, 4096, 65536, 1 MiB or Int.max
//   bit 3     resetAfterMessage (the peer's *_no_context_takeover)
//   bit 4     two messages: the data is cut at byte 1's point into two
//   bit 5     message mode: each message ends with finishMessage (the stripped
//             00 00 FF FF tail), else the data is fed raw
//
// Invariants:
// - the outcome (the bytes, or the error's close code) does not depend on how a
//   message is split into inflate calls: in one call, in three (at byte 1 and
//   byte 2's points) and byte by byte (data up to 512 bytes);
// - it is what a plain zlib loop over the whole message with an unbounded
//   buffer gives: the same bytes when that stays within the limit, 1009 when it
//   passes the limit before any error, 1007 when zlib fails first;
// - the output never grows past limit + 1 bytes (the one byte that shows the
//   limit was crossed) and a call that returns leaves it within the limit;
// - the Deflater round-trips the data as one or two messages for every window
//   size and both context modes, and so does a shared compressedTextFrame.
// Build and run with `scripts/fuzz InflaterFuzz`.
import CZlib
@testable import WebSocket

private func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant violated: \(message())") }
}

private let limits = [0, 1, 64, 1024, 4096, 65536, 1 << 20, Int.max]

/// What inflating a message gave.
private enum Outcome: Equatable {
    case bytes([UInt8])
    case failed(UInt16)
}

/// Feeds `pieces` to the inflater, then the message end when `finish`; checks the bound after every call.
private func inflate(_ inflater: Inflater, _ pieces: [ArraySlice<UInt8>], finish: Bool, limit: Int) -> Outcome {
    var output: [UInt8] = []
    do throws(WebSocketError) {
        for piece in pieces {
            try inflater.inflate(Array(piece), appendingTo: &output, limit: limit)
            check(output.count <= limit, "inflate returned with \(output.count) bytes, limit \(limit)")
        }
        if finish {
            try inflater.finishMessage(appendingTo: &output, limit: limit)
            check(output.count <= limit, "finishMessage returned with \(output.count) bytes, limit \(limit)")
        }
        return .bytes(output)
    } catch {
        // One byte past the limit shows it was crossed; never more (written as
        // count - 1 so a limit of Int.max cannot overflow).
        check(output.count - 1 <= limit, "output of \(output.count) bytes, limit \(limit)")
        check(error.code == .messageTooBig || error.code == .invalidPayload, "inflate failed with \(error)")
        check(error.code != .messageTooBig || output.count - 1 == limit, "1009 with \(output.count) bytes, limit \(limit)")
        return .failed(error.code.rawValue)
    }
}

/// A plain zlib raw inflate of a whole stream, restarted after each final block
/// as the Inflater does; stops once more than `limit` bytes came out.
private final class Reference {
    // zlib keeps a pointer back to the z_stream, so it must not move.
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private var open = false

    deinit {
        reset()
        stream.deallocate()
    }

    func inflate(_ input: [UInt8], limit: Int) -> Outcome {
        if !open {
            stream.initialize(to: z_stream())
            check(czlib_inflate_init2(stream, -15) == Z_OK, "inflateInit2")
            open = true
        }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var failed = false
        input.withUnsafeBufferPointer { inputBuffer in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: inputBuffer.baseAddress)
            stream.pointee.avail_in = UInt32(input.count)
            while true {
                let status = chunk.withUnsafeMutableBufferPointer { out -> Int32 in
                    stream.pointee.next_out = out.baseAddress
                    stream.pointee.avail_out = UInt32(out.count)
                    return CZlib.inflate(stream, Z_SYNC_FLUSH)
                }
                let filled = stream.pointee.avail_out == 0
                output += chunk[..<(chunk.count - Int(stream.pointee.avail_out))]
                if output.count > limit { break }
                switch status {
                case Z_OK: break
                case Z_STREAM_END: inflateReset(stream)  // what follows starts a new stream
                case Z_BUF_ERROR where !filled: break  // no progress possible: the input is used up
                default: failed = true
                }
                // Done when zlib failed, or took all input and had room to spare (nothing pending).
                if failed || status == Z_BUF_ERROR || (stream.pointee.avail_in == 0 && !filled) { break }
            }
            stream.pointee.next_in = nil
            stream.pointee.next_out = nil
        }
        if output.count > limit { return .failed(CloseCode.messageTooBig.rawValue) }
        return failed ? .failed(CloseCode.invalidPayload.rawValue) : .bytes(output)
    }

    func reset() {
        guard open else { return }
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        open = false
    }
}

/// `data` cut at fractions `a` and `b` (of 256) into up to three pieces.
private func pieces(_ data: ArraySlice<UInt8>, _ a: Int, _ b: Int) -> [ArraySlice<UInt8>] {
    let cuts = [a, b].map { data.startIndex + $0 * data.count / 256 }.sorted()
    return [data[data.startIndex..<cuts[0]], data[cuts[0]..<cuts[1]], data[cuts[1]...]]
}

private func checkInflate(_ data: ArraySlice<UInt8>, flags: Int, a: Int, b: Int) {
    let limit = limits[flags & 7]
    let reset = flags & 8 != 0
    let finish = flags & 0x20 != 0
    let cut = data.startIndex + a * data.count / 256
    let messages = flags & 0x10 != 0 ? [data[..<cut], data[cut...]] : [data]
    let whole = Inflater(resetAfterMessage: reset)
    let split = Inflater(resetAfterMessage: reset)
    let bytewise = Inflater(resetAfterMessage: reset)
    let reference = Reference()
    // Byte by byte only for short data: it costs a zlib call per byte. All
    // messages or none, so the byte-by-byte stream sees the same history.
    let bytewiseToo = data.count <= 512
    for message in messages {
        let expected = reference.inflate(Array(message) + (finish ? [0x00, 0x00, 0xFF, 0xFF] : []), limit: limit)
        let one = inflate(whole, [message], finish: finish, limit: limit)
        check(one == expected, "one call gives \(one), zlib \(expected)")
        let three = inflate(split, pieces(message, a, b), finish: finish, limit: limit)
        check(three == one, "split at \(a)/\(b) gives \(three), one call \(one)")
        if bytewiseToo {
            let single = inflate(bytewise, message.indices.map { message[$0...$0] }, finish: finish, limit: limit)
            check(single == one, "byte by byte gives \(single), one call \(one)")
        }
        // A connection fails at the first error; the stream is not used after it.
        if case .failed = one { return }
        if finish && reset { reference.reset() }
    }
}

/// Compresses `messages` with a Deflater and inflates them back.
private func checkRoundTrip(_ messages: [ArraySlice<UInt8>], windowBits: Int, reset: Bool) {
    let deflater = Deflater(windowBits: windowBits, resetAfterMessage: reset)
    let inflater = Inflater(resetAfterMessage: reset)
    for message in messages {
        let payload = Array(message)
        var compressed: [UInt8] = []
        check(deflater.compress(payload, appendingTo: &compressed), "compress failed")
        check(!compressed.isEmpty, "empty compressed message")
        let back = inflate(inflater, [compressed[...]], finish: true, limit: payload.count)
        check(back == .bytes(payload), "window \(windowBits) reset \(reset): \(payload.count) bytes come back as \(back)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 3 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: bytes, count: size))
    let flags = Int(input[0]), a = Int(input[1]), b = Int(input[2])
    let data = input[3...]
    checkInflate(data, flags: flags, a: a, b: b)
    // The same bytes as plain data, compressed and inflated back.
    let windowBits = 9 + (a + b) % 7
    let cut = data.startIndex + a * data.count / 256
    checkRoundTrip([data], windowBits: windowBits, reset: flags & 8 != 0)
    checkRoundTrip([data[..<cut], data[cut...], data[..<cut]], windowBits: windowBits, reset: flags & 8 != 0)
    if let frame = WebSocketConnection.compressedTextFrame(Array(data), windowBits: windowBits) {
        var receiver = WebSocketConnection(role: .client, maxMessageBytes: data.count + 64,
                                           deflate: DeflateParameters(serverMaxWindowBits: windowBits))
        var events: [WebSocketConnection.Event] = []
        receiver.receive(frame, events: &events)
        // A text frame: data that is not UTF-8 must fail with 1007 after inflating.
        if case .text(let text)? = events.first {
            check(events.count == 1 && text == Array(data), "shared frame came back as \(text.count) bytes")
        } else if case .failed(let error)? = events.last {
            check(error.code == .invalidPayload && String(validating: data, as: UTF8.self) == nil, "shared frame: \(error)")
        } else {
            check(false, "shared frame gives \(events)")
        }
    } else {
        check(false, "compressedTextFrame failed")
    }
    return 0
}
