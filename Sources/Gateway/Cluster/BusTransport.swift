import Redis

/// How the cluster bus reaches Redis: one Redis (`SingleRedisTransport`, plain pub/sub on
/// two connections) or a Redis Cluster (`ShardedRedisTransport`, sharded pub/sub on the
/// master of each channel's slot). The bus decides what to publish and when a write is
/// ordered; the transport only carries, and says what it heard and what it lost.
///
/// Topics are the bus's names (`chat:bus`, `chat:ch:<id>`, …): a transport may carry a
/// topic under other Redis channels but hands every payload back under its topic, once.
/// Confined to the bus's loop: every method is called there and every delegate call is
/// made there.
protocol BusTransport: AnyObject {
    var delegate: (any BusTransportDelegate)? { get set }

    /// Connects, and from then on keeps hearing `broadcastTopics` (what nodes `broadcast`
    /// to each other) and `scriptTopics` (what Redis's scripts PUBLISH), reconnecting with
    /// backoff.
    func start(broadcastTopics: [String], scriptTopics: [String])
    func stop()

    /// Commands and publishes can go out now.
    var canPublish: Bool { get }
    /// Every topic of `start` is heard: what nodes broadcast from now on reaches this one.
    var isHearing: Bool { get }
    /// The oldest command still unanswered was sent longer than `nanoseconds` ago.
    func isWaiting(longerThan nanoseconds: UInt64) -> Bool

    /// One command, sent to the Redis that holds `key`; `reply` runs once.
    func send(_ arguments: [[UInt8]], key: [UInt8], reply: @escaping (RedisReply) -> Void)
    /// `payload` on `topic` (a channel's stream), heard by the nodes that `follow` it;
    /// `answered` gets whether Redis took it.
    func publish(_ payload: [UInt8], on topic: String, answered: @escaping (Bool) -> Void)
    /// `payload` on `topic` (one of the `broadcastTopics`) to every node, this one included;
    /// `number` (increasing per node) tells copies of one event apart from another event.
    /// `answered` gets whether Redis took it everywhere.
    func broadcast(_ payload: [UInt8], on topic: String, number: UInt64, answered: @escaping (Bool) -> Void)
    /// Whether a broadcast taken by Redis is ahead of everything published after it on every
    /// node's subscription (`answered(true)` orders it), or only its echo on this node's own
    /// subscription says so (a single Redis: the echo follows everything published before).
    var broadcastIsOrderedByReply: Bool { get }

    /// Starts hearing `topics` (channel streams); each confirmation is
    /// `transportConfirmed(topic:)`.
    func follow(_ topics: [String])
    func unfollow(_ topics: [String])

    /// Drops the subscriptions (a stuck one): lost, then subscribed again.
    func abandonSubscription(_ reason: String)
    /// Tests: this node cannot publish for `duration` while its subscriptions stay.
    func holdPublisher(for duration: Duration)
}

/// What a `BusTransport` tells the bus (on the loop).
protocol BusTransportDelegate: AnyObject {
    /// Publishing works (again): what waited can go now.
    func transportCanPublish()
    /// Publishing stopped; events go to the outbox until `transportCanPublish`.
    func transportStoppedPublishing()
    /// Every topic of `start` is heard, at first or again after a loss.
    func transportHearing()
    /// A followed stream's subscription was confirmed.
    func transportConfirmed(topic: String)
    /// A payload off `topic` (a topic of `start`, or a followed stream).
    func transportReceived(_ payload: [UInt8], on topic: String)
    /// Subscriptions were lost (messages may have been missed): `topics` (the streams among
    /// them), and `hearing` whether the topics of `start` are all still heard.
    func transportLost(topics: [String], hearing: Bool)
}
