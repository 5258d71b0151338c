/// One message a chaos sender issued: its `clientMessageId` (`<user>-<n>`, unique
/// per message for the whole run), channel and text, and how many times it went out.
/// It goes out again, unchanged, whenever a kill took the connection before its reply.
struct ChaosSend: Sendable {
    let clientMessageID: String
    let channelIndex: Int
    let text: String
    /// `message.send` frames written for it so far; above 1 it was retried.
    var attempts = 0
}

/// An `ok` the gateway gave for a send: where it says the message is stored. The
/// final audit looks for each of these in the channel's history.
struct ChaosAck: Sendable {
    let channelIndex: Int
    let seq: Int64
    let messageID: String
    let clientMessageID: String
    let senderIndex: Int
}
