import Synchronization

/// A text message framed once for many connections (a broadcast): the unmasked frame,
/// and its permessage-deflate frames without context takeover, compressed on first use
/// per window size by whichever thread needs one, then shared.
public final class PreparedMessage: Sendable {
    /// The message text (UTF-8).
    public let payload: [UInt8]
    /// The payload as one unmasked, uncompressed text frame.
    public let frame: [UInt8]
    private let compressedFrames = Mutex<[Int: [UInt8]]>([:])

    public init(text payload: [UInt8]) {
        self.payload = payload
        var frame: [UInt8] = []
        FrameWriter.appendFrame(opcode: .text, payload: payload, to: &frame)
        self.frame = frame
    }

    /// The payload as one compressed text frame for a peer that resets its context per
    /// message with this window size (nil when compression does not apply).
    public func compressedFrame(windowBits: Int) -> [UInt8]? {
        compressedFrames.withLock { frames in
            if let frame = frames[windowBits] { return frame }
            let frame = WebSocketConnection.compressedTextFrame(payload, windowBits: windowBits)
            frames[windowBits] = frame
            return frame
        }
    }
}
