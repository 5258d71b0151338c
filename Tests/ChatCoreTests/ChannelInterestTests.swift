import Testing
@testable import ChatCore

/// Which channels a cluster node follows: the first local member session starts one (read
/// first, events wait), the last one leaving starts its grace, the grace's end stops it.
@Suite struct ChannelInterestTests {
    @Test func theFirstMemberSessionStartsAChannelAndItIsLoadingUntilRead() {
        var interest = ChannelInterest(grace: 1_000)
        #expect(interest.add(1, to: ["a", "b"]) == ["a", "b"])
        #expect(interest.state(of: "a") == .loading && !interest.isCurrent("a"))
        // A second session (another user, or the same user's second connection) starts nothing.
        #expect(interest.add(1, to: ["a", "c"]) == ["c"])
        #expect(interest.sessions(in: "a") == 2)
        #expect(interest.loaded(["a", "x"]) == ["a"], "a channel nobody follows is not settled")
        #expect(interest.isCurrent("a") && interest.state(of: "b") == .loading)
        #expect(interest.loaded(["a"]) == [], "settled once")
        #expect(interest.state(of: "x") == nil)
    }

    @Test func aChannelStaysFollowedForItsGraceAfterItsLastSession() {
        var interest = ChannelInterest(grace: 1_000)
        _ = interest.add(2, to: ["a"])
        _ = interest.loaded(["a"])
        #expect(interest.remove(1, from: ["a"], now: 100) == nil, "one session is left")
        #expect(interest.remove(1, from: ["a"], now: 200) == 1_200)
        #expect(interest.expire(now: 1_199).stopped == [])
        #expect(interest.isCurrent("a"), "followed, and current, during the grace")
        let end = interest.expire(now: 1_200)
        #expect(end.stopped == ["a"] && end.nextDue == nil)
        #expect(interest.state(of: "a") == nil)
        // Following it again reads it again.
        #expect(interest.add(1, to: ["a"]) == ["a"])
        #expect(interest.state(of: "a") == .loading)
    }

    @Test func aSessionWithinTheGraceKeepsTheChannelCurrentWithoutARead() {
        var interest = ChannelInterest(grace: 1_000)
        _ = interest.add(1, to: ["a", "b"])
        _ = interest.loaded(["a", "b"])
        #expect(interest.remove(1, from: ["a", "b"], now: 0) == 1_000)
        #expect(interest.add(1, to: ["a"]) == [], "a reconnect within the grace subscribes and reads nothing")
        let end = interest.expire(now: 1_000)
        #expect(end.stopped == ["b"])
        #expect(interest.isCurrent("a") && interest.state(of: "b") == nil)
    }

    @Test func idleChannelsEndEachAtItsOwnTime() {
        var interest = ChannelInterest(grace: 1_000)
        _ = interest.add(1, to: ["a", "b"])
        _ = interest.remove(1, from: ["a"], now: 0)
        _ = interest.remove(1, from: ["b"], now: 500)
        let first = interest.expire(now: 1_000)
        #expect(first.stopped == ["a"] && first.nextDue == 1_500)
        #expect(interest.expire(now: 1_500).stopped == ["b"])
        #expect(interest.streams.isEmpty)
    }

    @Test func removingWhatWasNeverAddedChangesNothing() {
        var interest = ChannelInterest(grace: 1_000)
        #expect(interest.remove(1, from: ["a"], now: 0) == nil)
        #expect(interest.add(0, to: ["a"]) == [] && interest.remove(0, from: ["a"], now: 0) == nil)
        _ = interest.add(1, to: ["a"])
        // A count larger than what is held ends the channel's sessions, never goes negative.
        #expect(interest.remove(5, from: ["a"], now: 0) == 1_000)
        #expect(interest.sessions(in: "a") == 0)
        #expect(interest.add(1, to: ["a"]) == [], "still followed in its grace")
        #expect(interest.sessions(in: "a") == 1)
    }

    @Test func aLostBusReadsEveryFollowedChannelAgain() {
        var interest = ChannelInterest(grace: 1_000)
        _ = interest.add(1, to: ["b", "a"])
        _ = interest.loaded(["a", "b"])
        #expect(interest.reloadAll() == ["a", "b"])
        #expect(interest.state(of: "a") == .loading && interest.state(of: "b") == .loading)
        #expect(interest.streams.keys.sorted() == ["a", "b"])
    }
}
