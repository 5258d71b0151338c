/// Builds `message.send` requests into one reused buffer:
/// `{"id":N,"type":"message.send","channelId":"C","text":"t=STAMP p=P n=N xxx…"}`,
/// the text padded with `x` to `textSize` bytes (never cut below the stamp).
/// The request id is the sequence number `N`.
struct MessageEncoder {
    let publisher: Int
    let textSize: Int
    private let middle: [UInt8]
    private var buffer: [UInt8] = []

    init(publisher: Int, channelID: String, textSize: Int) {
        self.publisher = publisher
        self.textSize = textSize
        middle = Array(",\"type\":\"message.send\",\"channelId\":\(JSONText.quote(channelID)),\"text\":\"t=".utf8)
        buffer.reserveCapacity(textSize + middle.count + 64)
    }

    /// The request for sequence `n` stamped `stamp`, valid during `body`.
    mutating func encode<R>(sequence n: Int, stamp: UInt64, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        buffer.removeAll(keepingCapacity: true)
        buffer.append(contentsOf: #"{"id":"#.utf8)
        Self.appendDecimal(UInt64(n), to: &buffer)
        buffer.append(contentsOf: middle)
        let textStart = buffer.count - 2  // the text begins with "t="
        Self.appendDecimal(stamp, to: &buffer)
        buffer.append(contentsOf: " p=".utf8)
        Self.appendDecimal(UInt64(publisher), to: &buffer)
        buffer.append(contentsOf: " n=".utf8)
        Self.appendDecimal(UInt64(n), to: &buffer)
        let textLength = buffer.count - textStart
        if textLength < textSize {
            buffer.append(UInt8(ascii: " "))
            if textLength + 1 < textSize {
                buffer.append(contentsOf: repeatElement(UInt8(ascii: "x"), count: textSize - textLength - 1))
            }
        }
        buffer.append(contentsOf: "\"}".utf8)
        return buffer.withUnsafeBytes(body)
    }

    static func appendDecimal(_ value: UInt64, to out: inout [UInt8]) {
        if value == 0 {
            out.append(UInt8(ascii: "0"))
            return
        }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes for up to 20 digits, built backwards
        var count = 0
        var v = value
        withUnsafeMutableBytes(of: &digits) { raw in
            while v > 0 {
                raw[23 - count] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
                count += 1
            }
        }
        withUnsafeBytes(of: &digits) { raw in
            out.append(contentsOf: raw[(24 - count)..<24])
        }
    }
}
