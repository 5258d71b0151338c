/// The requests `--read-and-type` adds to a member's traffic, all with id `"c"` (told apart
/// from a publisher's numbered sends by `FrameScanner.chatterReplyIsOK`).
enum ChatterRequest {
    static func typingStart(channelID: String) -> [UInt8] {
        Array(#"{"id":"c","type":"typing.start","channelId":\#(JSONText.quote(channelID))}"#.utf8)
    }

    /// `reaction.add` / `reaction.remove` of kind "+1" (§15).
    static func reaction(channelID: String, seq: UInt64, add: Bool) -> [UInt8] {
        let type = add ? "reaction.add" : "reaction.remove"
        return Array(#"{"id":"c","type":"\#(type)","channelId":\#(JSONText.quote(channelID)),"seq":\#(seq),"kind":"+1"}"#.utf8)
    }

    static func edit(channelID: String, seq: UInt64) -> [UInt8] {
        Array(#"{"id":"c","type":"message.update","channelId":\#(JSONText.quote(channelID)),"seq":\#(seq),"text":"edited"}"#.utf8)
    }

    /// A reply without the tool's stamp: its `message.new` is counted apart from the run's messages.
    static func reply(channelID: String, parentSeq: UInt64) -> [UInt8] {
        Array(#"{"id":"c","type":"message.send","channelId":\#(JSONText.quote(channelID)),"text":"reply","parentSeq":\#(parentSeq)}"#.utf8)
    }

    static func markRead(channelID: String, seq: UInt64) -> [UInt8] {
        Array(#"{"id":"c","type":"channel.markRead","channelId":\#(JSONText.quote(channelID)),"seq":\#(seq)}"#.utf8)
    }
}
