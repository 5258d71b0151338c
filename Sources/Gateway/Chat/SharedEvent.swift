import ChatCore
import Dispatch
import WebSocket

/// An event encoded and framed once, shared by every recipient: the prepared message and,
/// for `message.new`, what the per-recipient block check needs. A value: the message is
/// the one shared object.
struct SharedEvent: Sendable {
    typealias Origin = MessageOrigin

    let message: PreparedMessage
    let origin: Origin?
    /// Users (by number) whose sessions the engine sends their own version of the event.
    let skipping: Set<UserNumber>
    /// When set, only these users' sessions get the event.
    let onlyUsers: Set<UserNumber>?
    /// Monotonic nanoseconds when the core handed it to the shards (fan-out latency).
    let publishedAt = DispatchTime.now().uptimeNanoseconds

    init(payload: [UInt8], origin: Origin? = nil, skipping: Set<UserNumber> = [], onlyUsers: Set<UserNumber>? = nil) {
        message = PreparedMessage(text: payload)
        self.origin = origin
        self.skipping = skipping
        self.onlyUsers = onlyUsers
    }
}
