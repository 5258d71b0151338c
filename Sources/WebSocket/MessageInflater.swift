/// Inflates whole messages for a `WebSocketConnection` whose peer compresses each message
/// from an empty context (`*_no_context_takeover`, RFC 7692 §7.1.1). The compressed bytes
/// alone then decide the message, so an owner may hand back an earlier result for the same
/// bytes, e.g. for connections that all receive the same broadcast.
public protocol MessageInflater: AnyObject {
    /// The message `compressed` inflates to. `compressed` is one message's complete compressed
    /// payload (every frame's, unmasked, without the stripped 00 00 FF FF tail), already
    /// within the connection's `maxMessageBytes`; `inflate` inflates it with the connection's
    /// inflater and limit and throws what the connection would. The connection still checks
    /// the text's UTF-8.
    func inflatedMessage(_ compressed: [UInt8], inflate: () throws(WebSocketError) -> [UInt8]) throws(WebSocketError) -> [UInt8]
}
