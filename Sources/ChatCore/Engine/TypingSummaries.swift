/// Who is typing in each large channel, sent as one `typing.users` event per channel and
/// interval instead of one `typing.start` / `typing.stop` per typist (PROTOCOL.md §14): in a
/// room where everyone types, a member gets about one frame per interval for that channel
/// however many members type (two when the list empties and fills again within one).
///
/// Sans-IO on a monotonic clock. The first change in a quiet channel goes out at once; the
/// ones after it, within `interval` of the last event, wait for the interval's end and go
/// out together as the list is then. A typist is listed until his stop, or until
/// `staleAfter` without a new start (a relayed typist whose node went away sends no stop).
struct TypingSummaries: Sendable {
    /// At most one `typing.users` per channel this often.
    static let interval: Milliseconds = 500
    /// A listed typist without a new start for this long is dropped (the §14 expiry plus
    /// the 2 s a renewal may be held back).
    static let staleAfter: Milliseconds = TypingStates.expiry + TypingStates.forwardInterval

    /// What a change or a check asks of the driver.
    struct Outcome: Equatable {
        /// Send the channel's list now.
        var send = false
        /// Call `due` with `checkToken` after this many milliseconds (nil: no new check).
        var checkAfter: Milliseconds?
        var checkToken: UInt64 = 0
    }

    private struct Summary: Sendable {
        /// Typist → when his state goes stale; `order` keeps them by their first start.
        var staleAt: [UserID: Milliseconds] = [:]
        var order: [UserID] = []
        var sentAt: Milliseconds?
        /// The list changed since the last event.
        var changed = false
        /// When the next `due` call is expected (nil: none scheduled), and the token it carries.
        var checkAt: Milliseconds?
        var checkToken: UInt64 = 0
    }

    private var summaries: [ChannelID: Summary] = [:]
    private var lastToken: UInt64 = 0

    /// Whether `channel` has typists listed or a list still to send.
    func isListing(_ channel: ChannelID) -> Bool { summaries[channel] != nil }

    /// The typists listed in `channel`, by their first start.
    func typists(in channel: ChannelID) -> [UserID] { summaries[channel]?.order ?? [] }

    /// `user` started (a forwarded or relayed `typing.start`) or stopped typing in `channel` at `now`.
    mutating func changed(_ channel: ChannelID, user: UserID, typing: Bool, now: Milliseconds) -> Outcome {
        if summaries[channel] == nil {
            guard typing else { return Outcome() }
            summaries[channel] = Summary()
        }
        var token = lastToken
        defer { lastToken = token }
        let outcome = summaries.modifyValue(forKey: channel) { summary in
            if typing {
                if summary.staleAt.updateValue(now + Self.staleAfter, forKey: user) == nil {
                    summary.order.append(user)
                    summary.changed = true
                }
            } else if summary.staleAt.removeValue(forKey: user) != nil {
                summary.order.removeAll { $0 == user }
                summary.changed = true
            }
            return Self.settle(&summary, now: now, token: &token)
        }
        forgetIfIdle(channel)
        return outcome ?? Outcome()
    }

    /// The check of `channel` carrying `token`, at `now`: drops stale typists, and sends the
    /// list if it changed and the interval is over. A check another one replaced does
    /// nothing; one that comes early (a timer ahead of the clock) asks to be called again.
    mutating func due(_ channel: ChannelID, token: UInt64, now: Milliseconds) -> Outcome {
        var next = lastToken
        defer { lastToken = next }
        let outcome = summaries.modifyValue(forKey: channel) { summary -> Outcome in
            guard let checkAt = summary.checkAt, summary.checkToken == token else { return Outcome() }
            guard now >= checkAt else { return Outcome(checkAfter: checkAt - now, checkToken: token) }
            let before = summary.order.count
            summary.order.removeAll { summary.staleAt[$0].map { $0 <= now } ?? true }
            if summary.order.count != before {
                summary.staleAt = summary.staleAt.filter { $0.value > now }
                summary.changed = true
            }
            summary.checkAt = nil
            return Self.settle(&summary, now: now, token: &next)
        }
        forgetIfIdle(channel)
        return outcome ?? Outcome()
    }

    /// Sends when a change waits and the interval is over; then asks for a check when the
    /// next thing is due (the interval's end for a waiting change, else the earliest
    /// staleness) unless one already comes by then.
    private static func settle(_ summary: inout Summary, now: Milliseconds, token: inout UInt64) -> Outcome {
        var outcome = Outcome()
        if summary.changed, summary.sentAt.map({ now - $0 >= interval }) ?? true {
            summary.sentAt = now
            summary.changed = false
            outcome.send = true
        }
        var next: Milliseconds?
        if summary.changed, let sentAt = summary.sentAt { next = sentAt + interval }
        if let stale = summary.staleAt.values.min() { next = min(next ?? stale, stale) }
        if let next, summary.checkAt.map({ next < $0 }) ?? true {
            token &+= 1
            summary.checkAt = next
            summary.checkToken = token
            outcome.checkAfter = max(0, next - now)
            outcome.checkToken = token
        }
        return outcome
    }

    /// A channel with nobody listed and nothing waiting is forgotten.
    private mutating func forgetIfIdle(_ channel: ChannelID) {
        guard let summary = summaries[channel], summary.order.isEmpty, summary.checkAt == nil, !summary.changed else { return }
        summaries[channel] = nil
    }
}
