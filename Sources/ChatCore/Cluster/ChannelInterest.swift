/// Which channels' event streams a cluster node follows (sans-IO): those where a member
/// holds a live session on this node. A node hears a channel's messages, changes, read
/// marks and typing only while it follows the channel, so the bus work of a node grows with
/// its own connections, not with the cluster's traffic.
///
/// A channel is followed from the moment its first local member session appears (the
/// driver subscribes to its stream and reads its current state from the store: until that
/// read is in, the stream is `loading` and its events wait), and stays followed for `grace`
/// after its last local member session left, so a client that reconnects at once does not
/// pay for a new subscription and a new read. What the node knew of a channel it stopped
/// following is stale from then on: following it again reads it again.
///
/// Counts are of sessions, not users: a user with two connections here counts twice, and
/// a membership change of that user moves the count by two.
public struct ChannelInterest: Sendable, Equatable {
    public enum StreamState: Sendable, Equatable {
        /// Followed; its state is being read from the store, its events wait.
        case loading
        /// Followed, and the node's state of it is current.
        case current
    }

    /// How long a channel stays followed after its last local member session left.
    public let grace: Milliseconds
    /// Live sessions here of each followed channel's members.
    private var localSessions: [ChannelID: Int] = [:]
    /// The followed channels.
    public private(set) var streams: [ChannelID: StreamState] = [:]
    /// Followed channels without a local member session, and since when.
    private var idleSince: [ChannelID: Milliseconds] = [:]

    public init(grace: Milliseconds) {
        self.grace = max(grace, 0)
    }

    /// The state of `channel`'s stream here; nil when it is not followed.
    public func state(of channel: ChannelID) -> StreamState? { streams[channel] }

    /// Whether the node's state of `channel` is current (followed and read).
    public func isCurrent(_ channel: ChannelID) -> Bool { streams[channel] == .current }

    /// Local member sessions of `channel`.
    public func sessions(in channel: ChannelID) -> Int { localSessions[channel] ?? 0 }

    /// `count` member sessions of `channels` appeared here (sessions opened, or their user
    /// joined). Returns the channels to start following: subscribe, then read their state
    /// (`loaded` when it is in). A channel idle within its grace is simply followed on.
    public mutating func add(_ count: Int, to channels: some Sequence<ChannelID>) -> [ChannelID] {
        guard count > 0 else { return [] }
        var start: [ChannelID] = []
        for channel in channels {
            localSessions[channel, default: 0] += count
            idleSince[channel] = nil
            if streams[channel] == nil {
                streams[channel] = .loading
                start.append(channel)
            }
        }
        return start
    }

    /// `count` member sessions of `channels` went away (closed, or their user left) at
    /// `now`. Returns when the earliest of the channels left idle is due (`expire`), nil
    /// when none was.
    public mutating func remove(_ count: Int, from channels: some Sequence<ChannelID>, now: Milliseconds) -> Milliseconds? {
        guard count > 0 else { return nil }
        var due: Milliseconds?
        for channel in channels {
            guard let sessions = localSessions[channel] else { continue }
            let left = sessions - count
            if left > 0 {
                localSessions[channel] = left
                continue
            }
            localSessions[channel] = nil
            guard streams[channel] != nil else { continue }
            idleSince[channel] = now
            due = min(due ?? .max, now + grace)
        }
        return due
    }

    /// The channels idle for `grace` by `now`: no longer followed (unsubscribe, forget their
    /// state). Returns them sorted, and when the next idle one is due (nil: none left).
    public mutating func expire(now: Milliseconds) -> (stopped: [ChannelID], nextDue: Milliseconds?) {
        var stopped: [ChannelID] = []
        var next: Milliseconds?
        for (channel, since) in idleSince {
            if now >= since + grace {
                stopped.append(channel)
            } else {
                next = min(next ?? .max, since + grace)
            }
        }
        for channel in stopped {
            idleSince[channel] = nil
            streams[channel] = nil
        }
        return (stopped.sorted(), next)
    }

    /// The store read for `channels` is in (or failed: their state stays as it was, and they
    /// are followed on as current, so that events flow again). Returns those still followed
    /// and loading until now, whose waiting events go next.
    public mutating func loaded(_ channels: some Sequence<ChannelID>) -> [ChannelID] {
        var settled: [ChannelID] = []
        for channel in channels where streams[channel] == .loading {
            streams[channel] = .current
            settled.append(channel)
        }
        return settled
    }

    /// Every followed channel's state may have missed events (the bus was lost): all are read
    /// again. Returns them sorted, to read.
    public mutating func reloadAll() -> [ChannelID] {
        for channel in streams.keys { streams[channel] = .loading }
        return streams.keys.sorted()
    }
}
