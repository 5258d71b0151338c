import ChatCore
import Dispatch
import EventLoop
import Redis

/// The per-user message rate (PROTOCOL.md §6) shared by every node: one token bucket per
/// user in Redis, taken by a Lua script in one round trip, atomic across nodes. When Redis
/// cannot answer in time, the node's own bucket decides.
struct SharedRateLimit: Sendable {
    /// GCRA, as `TokenBucketLimiter` keeps it, on Redis: per user only the time (µs) at which
    /// its bucket is full again. Returns `{1, 0}` (admitted) or `{0, retryAfterMs}`.
    static let takeScript = """
        local now = tonumber(ARGV[1])
        local interval = tonumber(ARGV[2])
        local tolerance = tonumber(ARGV[3])
        local full = tonumber(redis.call('GET', KEYS[1]) or '0')
        if full < now then full = now end
        local ahead = full - now
        if ahead > tolerance then
          return {0, math.ceil((ahead - tolerance) / 1000)}
        end
        local nextFull = full + interval
        redis.call('SET', KEYS[1], string.format('%.0f', nextFull), 'PX', math.ceil((nextFull - now) / 1000) + 1)
        return {1, 0}
        """

    /// The rate (when `ARGV[2]` is not 0) and a channel's slow mode (§16) in one step: the
    /// slow-mode slot `KEYS[2]` is free again at the time (µs) it holds; a send takes it for
    /// `ARGV[4]` µs and a rate token, or neither. Returns `{1, 0, 0}`, `{0, retryAfterMs, 1}`
    /// (the rate refused) or `{0, retryAfterMs, 2}` (slow mode refused).
    static let takeWithSlowModeScript = """
        local now = tonumber(ARGV[1])
        local interval = tonumber(ARGV[2])
        local tolerance = tonumber(ARGV[3])
        local slow = tonumber(ARGV[4])
        local free = tonumber(redis.call('GET', KEYS[2]) or '0')
        if free > now then
          return {0, math.ceil((free - now) / 1000), 2}
        end
        if interval > 0 then
          local full = tonumber(redis.call('GET', KEYS[1]) or '0')
          if full < now then full = now end
          local ahead = full - now
          if ahead > tolerance then
            return {0, math.ceil((ahead - tolerance) / 1000), 1}
          end
          local nextFull = full + interval
          redis.call('SET', KEYS[1], string.format('%.0f', nextFull), 'PX', math.ceil((nextFull - now) / 1000) + 1)
        end
        redis.call('SET', KEYS[2], string.format('%.0f', now + slow), 'PX', math.ceil(slow / 1000) + 1)
        return {1, 0, 0}
        """

    /// The key of `user`'s slow-mode slot in `channel`: in the user's hash slot, with his rate
    /// key, since one script takes both.
    static func slowModeKey(_ user: UserID, channel: ChannelID) -> String { "chat:slow-mode:" + UserHashTag.of(user) + ":" + channel }

    /// The longest wait a rate refusal can honestly name (a bucket of 1 a second and a
    /// burst far beyond any configuration); past it the script's answer is not believed.
    static let maxRetryAfterMs: Int64 = 3_600_000

    /// Which of a user's rates: messages (§6) or changes (§15), each a bucket of its own.
    enum Bucket: Sendable {
        case messages
        case changes

        var keyPrefix: String {
            switch self {
            case .messages: "chat:rate:"
            case .changes: "chat:change-rate:"
            }
        }
    }

    /// `user`'s bucket, in the user's hash slot (`UserHashTag`).
    static func key(_ user: UserID, bucket: Bucket = .messages) -> String { bucket.keyPrefix + UserHashTag.of(user) }

    private let redis: ClusterRedis

    init(redis: ClusterRedis) {
        self.redis = redis
    }

    /// Takes one token of `user`'s rate in `bucket` from the bucket every node shares; `decided`
    /// gets nil when Redis cannot answer within `ClusterRedis.answerWaitNanoseconds` (this
    /// node's own bucket decides then). `now` in wall-clock ms.
    func take(user: UserID, bucket: Bucket = .messages, ratePerSecond: Int, burst: Int, now: Milliseconds,
              decided: @escaping @Sendable (TokenBucketLimiter<UserNumber>.Decision?) -> Void) {
        redis.loop.execute { [redis] in
            guard redis.canSend, ratePerSecond > 0 else {
                decided(nil)
                return
            }
            let answer = Answer<TokenBucketLimiter<UserNumber>.Decision>(decided)
            redis.loop.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: redis.answerWaitNanoseconds))) {
                answer.give(nil)
            }
            let interval = 1_000_000 / Int64(ratePerSecond)
            let tolerance = Int64(max(0, burst - 1)) * interval
            redis.send(["EVAL", Self.takeScript, "1", Self.key(user, bucket: bucket), "\(now * 1000)", "\(interval)", "\(tolerance)"],
                       key: Self.key(user, bucket: bucket)) { reply in
                guard case .array(let parts) = reply, parts.count == 2,
                      case .integer(let admitted) = parts[0], case .integer(let retryAfterMs) = parts[1] else {
                    answer.give(nil)
                    return
                }
                // A rate key someone else wrote (`SET chat:rate:<user> inf`) makes the script
                // answer nonsense (retry in Int64.min ms): out of range, the node's own bucket
                // decides instead.
                guard admitted == 1 || (admitted == 0 && (1...Self.maxRetryAfterMs).contains(retryAfterMs)) else {
                    redis.rejectMalformed("chat:rate")
                    answer.give(nil)
                    return
                }
                answer.give(admitted == 1 ? .admitted : .limited(retryAfterMs: retryAfterMs))
            }
        }
    }

    /// `take` with the channel's slow mode (§16): `decided` gets the rate's decision and, when
    /// slow mode refused, its wait; nil and nil when Redis cannot answer in time (this node
    /// decides both then).
    func take(user: UserID, ratePerSecond: Int, burst: Int, slowMode: SlowModeAsk, now: Milliseconds,
              decided: @escaping @Sendable (TokenBucketLimiter<UserNumber>.Decision?, Int64?) -> Void) {
        redis.loop.execute { [redis] in
            guard redis.canSend, slowMode.intervalMilliseconds > 0 else {
                decided(nil, nil)
                return
            }
            let answer = Answer<SendDecision> { decision in decided(decision?.rate, decision?.slowModeRetryAfterMs) }
            redis.loop.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: redis.answerWaitNanoseconds))) {
                answer.give(nil)
            }
            let interval = ratePerSecond > 0 ? 1_000_000 / Int64(ratePerSecond) : 0
            let tolerance = Int64(max(0, burst - 1)) * interval
            redis.send(["EVAL", Self.takeWithSlowModeScript, "2", Self.key(user), Self.slowModeKey(user, channel: slowMode.channel),
                        "\(now * 1000)", "\(interval)", "\(tolerance)", "\(slowMode.intervalMilliseconds * 1000)"],
                       key: Self.key(user)) { reply in
                guard case .array(let parts) = reply, parts.count == 3, case .integer(let admitted) = parts[0],
                      case .integer(let retryAfterMs) = parts[1], case .integer(let refusedBy) = parts[2],
                      admitted == 1 || (admitted == 0 && (1...Self.maxRetryAfterMs).contains(retryAfterMs)) else {
                    redis.rejectMalformed("chat:slow-mode")
                    answer.give(nil)
                    return
                }
                if admitted == 1 {
                    answer.give(SendDecision(rate: .admitted, slowModeRetryAfterMs: nil))
                } else if refusedBy == 2 {
                    answer.give(SendDecision(rate: nil, slowModeRetryAfterMs: retryAfterMs))
                } else {
                    answer.give(SendDecision(rate: .limited(retryAfterMs: retryAfterMs), slowModeRetryAfterMs: nil))
                }
            }
        }
    }

    struct SendDecision: Sendable {
        var rate: TokenBucketLimiter<UserNumber>.Decision?
        var slowModeRetryAfterMs: Int64?
    }

    /// The first of the reply and the answer deadline decides; the later one is ignored.
    /// Used on the loop only.
    private final class Answer<Value: Sendable>: @unchecked Sendable {
        private var decided: (@Sendable (Value?) -> Void)?
        init(_ decided: @escaping @Sendable (Value?) -> Void) { self.decided = decided }
        func give(_ decision: Value?) {
            let decided = self.decided
            self.decided = nil
            decided?(decision)
        }
    }
}
