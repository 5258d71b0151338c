import ChatCore

/// Told on `chat:resync` by a node whose outbox dropped events (`BusOutbox`): the other
/// nodes send `session.resync` to their connections for these channels (or all of
/// theirs), since those live events will never come. Checked like any bus input.
struct BusResyncNotice: Equatable {
    var node: String
    var scope: ResyncScope

    func encoded() -> [UInt8] {
        var w = JSONWriter(capacity: 64 + scope.channels.count * 24)
        w.beginObject()
        w.key("node"); w.string(node)
        if scope.everything {
            w.key("all"); w.bool(true)
        } else {
            w.key("channelIds")
            w.beginArray()
            for channel in scope.channels.sorted() { w.string(channel) }
            w.endArray()
        }
        w.endObject()
        return w.bytes
    }

    static func decode(_ bytes: [UInt8]) -> BusResyncNotice? {
        guard case .object(let object)? = try? JSONParser.parse(bytes), let node = object["node"]?.stringValue,
              BusInputRules.isIdentifier(node) else { return nil }
        if case .bool(true)? = object["all"] { return BusResyncNotice(node: node, scope: .all) }
        guard let ids = object["channelIds"]?.arrayValue, ids.count <= ResyncScope.maxChannels else { return nil }
        var scope = ResyncScope()
        for id in ids {
            guard let channel = id.stringValue, BusInputRules.isIdentifier(channel) else { return nil }
            scope.add(.channel(channel))
        }
        return BusResyncNotice(node: node, scope: scope)
    }
}
