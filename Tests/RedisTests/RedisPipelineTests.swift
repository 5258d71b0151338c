import Testing
@testable import Redis

/// The commands waiting on one connection (sans-IO): replies in order, pushed messages and
/// confirmations apart from them on a subscribed connection, the oldest deadline deciding.
@Suite struct RedisPipelineTests {
    private func message(_ text: String) -> RedisReply {
        .array([.string(Array("message".utf8)), .string(Array("bus".utf8)), .string(Array(text.utf8))])
    }

    @Test func repliesGoToTheOldestWaitingCommand() {
        var pipeline = RedisPipeline<Int>()
        pipeline.sent(1, deadline: 100)
        pipeline.sent(2, deadline: 200)
        #expect(pipeline.nextDeadline == 100 && !pipeline.isOverdue(now: 99) && pipeline.isOverdue(now: 100))
        guard case .answer(1?) = pipeline.route(.status("OK")) else { Issue.record("not 1"); return }
        #expect(pipeline.nextDeadline == 200)
        guard case .answer(2?) = pipeline.route(.error("ERR")) else { Issue.record("not 2"); return }
        #expect(pipeline.isEmpty && pipeline.nextDeadline == nil && !pipeline.isOverdue(now: .max))
        guard case .unexpected = pipeline.route(.integer(1)) else { Issue.record("a reply nothing asked for"); return }
    }

    @Test func aSubscribedConnectionTellsMessagesFromPINGReplies() {
        var pipeline = RedisPipeline<String>()
        pipeline.sentSubscribe(channels: 2, deadline: 50)
        let confirmation = RedisReply.array([.string(Array("subscribe".utf8)), .string(Array("bus".utf8)), .integer(1)])
        guard case .subscription = pipeline.route(confirmation) else { Issue.record("first confirmation"); return }
        #expect(pipeline.nextDeadline == 50, "one confirmation still due")
        guard case .subscription = pipeline.route(message("early")) else { Issue.record("message"); return }
        guard case .subscription = pipeline.route(confirmation) else { Issue.record("second confirmation"); return }
        #expect(pipeline.isEmpty)
        pipeline.sent("keepalive", deadline: 300)
        guard case .subscription = pipeline.route(message("between")) else { Issue.record("message"); return }
        #expect(pipeline.count == 1, "a message does not answer the PING")
        let pong = RedisReply.array([.string(Array("pong".utf8)), .string([])])
        guard case .answer("keepalive"?) = pipeline.route(pong) else { Issue.record("pong"); return }
        #expect(pipeline.isEmpty)
    }

    @Test func aRefusedSubscribeEndsItsEntry() {
        var pipeline = RedisPipeline<String>()
        pipeline.sentSubscribe(channels: 3, deadline: 50)
        guard case .subscription = pipeline.route(.error("NOPERM")) else { Issue.record("refusal"); return }
        #expect(pipeline.isEmpty)
    }

    @Test func unsubscribeConfirmationsEndOnlyTheirOwnEntry() {
        var pipeline = RedisPipeline<String>()
        func confirmation(_ kind: String, _ channel: String) -> RedisReply {
            .array([.string(Array(kind.utf8)), .string(Array(channel.utf8)), .integer(0)])
        }
        pipeline.sentSubscribe(channels: 1, deadline: 10)
        pipeline.sentUnsubscribe(channels: 2, deadline: 20)
        pipeline.sentSubscribe(channels: 1, deadline: 30)
        // An unsubscribe confirmation does not count for the subscribe in front of it.
        guard case .subscription = pipeline.route(confirmation("unsubscribe", "stray")) else { Issue.record("stray"); return }
        #expect(pipeline.nextDeadline == 10)
        _ = pipeline.route(confirmation("subscribe", "a"))
        #expect(pipeline.nextDeadline == 20)
        _ = pipeline.route(confirmation("unsubscribe", "a"))
        _ = pipeline.route(message("still in flight"))
        #expect(pipeline.nextDeadline == 20, "one unsubscribe confirmation still due")
        _ = pipeline.route(confirmation("unsubscribe", "b"))
        #expect(pipeline.nextDeadline == 30)
        _ = pipeline.route(confirmation("subscribe", "c"))
        #expect(pipeline.isEmpty && pipeline.isSubscribed)
    }

    @Test func removeAllHandsBackEveryWaiterInOrder() {
        var pipeline = RedisPipeline<Int>()
        for n in 0..<3_000 { pipeline.sent(n, deadline: UInt64(n)) }
        for n in 0..<2_000 {
            guard case .answer(let waiter) = pipeline.route(.null), waiter == n else { Issue.record("order at \(n)"); return }
        }
        #expect(pipeline.nextDeadline == 2_000)
        #expect(pipeline.removeAll() == Array(2_000..<3_000))
        #expect(pipeline.isEmpty)
    }

    private func push(_ kind: String, _ channel: String, _ last: RedisReply) -> RedisReply {
        .array([.string(Array(kind.utf8)), .string(Array(channel.utf8)), last])
    }

    @Test func shardedMessagesAndConfirmationsGoToTheSubscription() {
        var pipeline = RedisPipeline<String>()
        pipeline.sentSubscribe(channels: 2, sharded: true, deadline: 10)
        // A plain subscribe confirmation does not count for an SSUBSCRIBE.
        _ = pipeline.route(push("subscribe", "x", .integer(1)))
        #expect(pipeline.count == 1)
        guard case .subscription = pipeline.route(push("ssubscribe", "{a}1", .integer(1))) else { Issue.record("1"); return }
        guard case .subscription = pipeline.route(push("smessage", "{a}1", .string(Array("early".utf8)))) else {
            Issue.record("smessage"); return
        }
        #expect(pipeline.count == 1, "a message confirms nothing")
        _ = pipeline.route(push("ssubscribe", "{a}2", .integer(2)))
        #expect(pipeline.isEmpty && pipeline.isSubscribed)
        pipeline.sentUnsubscribe(channels: 1, sharded: true, deadline: 20)
        _ = pipeline.route(push("unsubscribe", "{a}1", .integer(1)))
        #expect(pipeline.count == 1, "a plain unsubscribe does not count for an SUNSUBSCRIBE")
        guard case .subscription = pipeline.route(push("sunsubscribe", "{a}1", .integer(1))) else { Issue.record("2"); return }
        #expect(pipeline.isEmpty)
    }

    @Test func anUnaskedSunsubscribeGoesToTheSubscription() {
        var pipeline = RedisPipeline<String>()
        pipeline.sentSubscribe(channels: 1, sharded: true, deadline: 10)
        _ = pipeline.route(push("ssubscribe", "c", .integer(1)))
        pipeline.sent("keepalive", deadline: 30)
        // Redis drops a channel whose slot moved away, with no command asking.
        guard case .subscription = pipeline.route(push("sunsubscribe", "c", .integer(0))) else { Issue.record("push"); return }
        #expect(pipeline.count == 1, "the PING still waits")
        let pong = RedisReply.array([.string(Array("pong".utf8)), .string([])])
        guard case .answer("keepalive"?) = pipeline.route(pong) else { Issue.record("pong"); return }
    }

    @Test func aMovedSSubscribeEndsItsEntry() {
        var pipeline = RedisPipeline<String>()
        pipeline.sentSubscribe(channels: 1, sharded: true, deadline: 10)
        pipeline.sentSubscribe(channels: 1, sharded: true, deadline: 20)
        guard case .subscription = pipeline.route(.error("MOVED 866 127.0.0.1:7001")) else { Issue.record("moved"); return }
        #expect(pipeline.nextDeadline == 20)
        _ = pipeline.route(push("ssubscribe", "b", .integer(1)))
        #expect(pipeline.isEmpty)
    }
}
