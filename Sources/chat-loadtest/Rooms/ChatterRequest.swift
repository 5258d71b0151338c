/// The requests `--read-and-type` adds to a member's traffic, all with id `"c"` (told apart
/// from a publisher's numbered sends by `FrameScanner.chatterReplyIsOK`).
enum ChatterRequest {
    static func typingStart(channelID: String) -> [UInt8] {
        Array(#"{"id":"c","type":"typing.start","channelId":\#(JSONText.quote(channelID))}"#.utf8)
    }

    static func markRead(channelID: String, seq: UInt64) -> [UInt8] {
        Array(#"{"id":"c","type":"channel.markRead","channelId":\#(JSONText.quote(channelID)),"seq":\#(seq)}"#.utf8)
    }
}
