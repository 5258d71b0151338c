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
        sendResync { scope.channels.contains($0) }
    }
}
