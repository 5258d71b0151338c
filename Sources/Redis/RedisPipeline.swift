/// The commands a Redis connection sent and still waits on, in order (sans-IO): Redis
/// answers a connection's commands in the order they came, so each reply belongs to the
/// oldest waiting command, except on a subscribed connection, where pushed messages and
/// subscription confirmations arrive between the replies and go to the subscription.
/// Sharded pub/sub (Redis 7, a cluster's SSUBSCRIBE) works alike: `smessage` is a pushed
/// message, `ssubscribe`/`sunsubscribe` confirm their own commands, and an `sunsubscribe`
/// no command asked for (Redis sends one when the channel's slot moved to another node)
/// goes to the subscription too. Such a push cannot be told from a confirmation by its
/// text: one that comes while an SUNSUBSCRIBE of ours waits is counted for it, which only
/// ends that command's deadline one confirmation early.
///
/// Every command gets a deadline when it is sent. As replies come in order, an unanswered
/// command holds up every later one: once the oldest is overdue the connection is judged
/// stuck (a paused or partitioned server) and the driver closes it, failing them all.
public struct RedisPipeline<Waiter> {
    public enum Route {
        /// The reply of the oldest waiting command.
        case answer(Waiter?)
        /// A message or subscription confirmation for the connection's subscription.
        case subscription
        /// A reply nothing waits for: the server broke the protocol.
        case unexpected
    }

    private struct Pending {
        var waiter: Waiter?
        var deadline: UInt64
        /// SUBSCRIBE or UNSUBSCRIBE: confirmations still to come (one per channel); 0 for
        /// other commands.
        var confirmations: Int
        /// The confirmations' kind: `subscribe`, `unsubscribe`, `ssubscribe` or
        /// `sunsubscribe` (nil for other commands).
        var confirmationKind: String? = nil
    }

    private var pending: [Pending] = []
    private var head = 0
    public private(set) var isSubscribed = false

    public init() {}

    public var isEmpty: Bool { head == pending.count }
    public var count: Int { pending.count - head }

    /// When the oldest waiting command must have its reply (uptime ns), nil when none waits.
    public var nextDeadline: UInt64? { isEmpty ? nil : pending[head].deadline }

    /// Whether the oldest waiting command went unanswered past its deadline.
    public func isOverdue(now: UInt64) -> Bool {
        guard let deadline = nextDeadline else { return false }
        return now >= deadline
    }

    /// A command was sent; its reply is due by `deadline`.
    public mutating func sent(_ waiter: Waiter?, deadline: UInt64) {
        pending.append(Pending(waiter: waiter, deadline: deadline, confirmations: 0))
    }

    /// SUBSCRIBE (`sharded`: SSUBSCRIBE) to `channels` was sent: one confirmation per
    /// channel is due by `deadline`; from then on pushed messages are expected.
    public mutating func sentSubscribe(channels: Int, sharded: Bool = false, deadline: UInt64) {
        isSubscribed = true
        pending.append(Pending(waiter: nil, deadline: deadline, confirmations: max(channels, 1),
                               confirmationKind: sharded ? "ssubscribe" : "subscribe"))
    }

    /// UNSUBSCRIBE (`sharded`: SUNSUBSCRIBE) from `channels` (at least one) was sent: one
    /// confirmation per channel is due by `deadline` (Redis confirms a channel that was not
    /// subscribed too). The connection stays in subscribed mode, even once it has no
    /// channel left.
    public mutating func sentUnsubscribe(channels: Int, sharded: Bool = false, deadline: UInt64) {
        pending.append(Pending(waiter: nil, deadline: deadline, confirmations: max(channels, 1),
                               confirmationKind: sharded ? "sunsubscribe" : "unsubscribe"))
    }

    /// Where `reply` goes.
    public mutating func route(_ reply: RedisReply) -> Route {
        if isSubscribed, case .array(let parts) = reply, let kind = parts.first?.text?.lowercased() {
            switch kind {
            case "message", "pmessage", "smessage":
                return .subscription
            case "subscribe", "psubscribe", "unsubscribe", "punsubscribe", "ssubscribe", "sunsubscribe":
                let confirms = kind.hasPrefix("s") ? kind : kind.hasSuffix("unsubscribe") ? "unsubscribe" : "subscribe"
                if !isEmpty && pending[head].confirmations > 0 && pending[head].confirmationKind == confirms {
                    pending[head].confirmations -= 1
                    if pending[head].confirmations == 0 { _ = popHead() }
                }
                return .subscription
            default:
                break  // "pong": the reply of a PING
            }
        }
        guard !isEmpty else { return .unexpected }
        if pending[head].confirmations > 0 {
            // A (UN)SUBSCRIBE refused as a whole (an error instead of its confirmations).
            _ = popHead()
            return .subscription
        }
        return .answer(popHead())
    }

    /// Every waiting command, oldest first; none waits after (the connection is gone).
    public mutating func removeAll() -> [Waiter] {
        let waiters = pending[head...].compactMap(\.waiter)
        pending.removeAll()
        head = 0
        return waiters
    }

    private mutating func popHead() -> Waiter? {
        let waiter = pending[head].waiter
        head += 1
        if head == pending.count {
            pending.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1_024 && head * 2 >= pending.count {
            pending.removeFirst(head)
            head = 0
        }
        return waiter
    }
}
