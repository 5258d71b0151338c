/// A typing change carried to the other nodes (PROTOCOL.md §14 across nodes): not stored
/// and not ordered with the writes; each node fans it out to its own connections with the
/// same §5 check as the typing user's messages. The typing user's node alone keeps the
/// state (the 2 s forwarding limit, the 10 s expiry, the stop on send) and relays what it
/// forwards.
public struct TypingRelay: Sendable, Equatable {
    public var node: String
    public var started: Bool
    public var channelID: ChannelID
    public var userID: UserID

    public init(node: String, started: Bool, channelID: ChannelID, userID: UserID) {
        self.node = node
        self.started = started
        self.channelID = channelID
        self.userID = userID
    }

    public func encoded() -> [UInt8] {
        var w = JSONWriter(capacity: 96)
        w.beginObject()
        w.key("node"); w.string(node)
        w.key("started"); w.bool(started)
        w.key("channelId"); w.string(channelID)
        w.key("userId"); w.string(userID)
        w.endObject()
        return w.bytes
    }

    public static func decode(_ bytes: [UInt8]) -> TypingRelay? {
        guard case .object(let object)? = try? JSONParser.parse(bytes),
              let node = object["node"]?.stringValue, case .bool(let started)? = object["started"],
              let channel = object["channelId"]?.stringValue, let user = object["userId"]?.stringValue,
              BusInputRules.isIdentifier(node), BusInputRules.isIdentifier(channel), BusInputRules.isUserID(user)
        else { return nil }
        return TypingRelay(node: node, started: started, channelID: channel, userID: user)
    }
}
