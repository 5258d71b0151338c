import ChatCore

extension ChatService {
    /// Another node's outbox dropped events (`BusOutbox`): the connections here that
    /// follow the channels they touched hear `session.resync` for those channels and
    /// read the missed events from history. Everything: as after this node's own outage.
    func busResync(_ scope: ResyncScope) {
        guard !scope.everything else {
            busResumed()
            return
        }
        inbox.async { [self] in
            metrics.busResyncs.increment()
            for user in sessions.keys {
                let channels = directory.channelIDs(of: user).filter(scope.channels.contains).sorted()
                guard !channels.isEmpty else { continue }
                let payload = WireEncoding.event("session.resync") { w in
                    w.beginObject()
                    w.key("channelIds")
                    w.beginArray()
                    for channel in channels { w.string(channel) }
                    w.endArray()
                    w.endObject()
                }
                run([.publishToUsers([user], payload: payload, excluding: nil)])
            }
        }
    }
}
