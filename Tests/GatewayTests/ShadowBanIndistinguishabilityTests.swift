import Foundation
import Testing
@testable import Gateway

/// PROTOCOL.md §16: nothing tells a shadow-banned user. Tested the way the hostile suite
/// tests blocks: from the banned user's side only, by the shape of every reply and view and
/// by the time the replies take, 200 sends before the ban against 200 after it.
@Suite("Shadow ban indistinguishability", .serialized)
struct ShadowBanIndistinguishabilityTests {
    /// What a reply shows besides its values: its keys and each value's JSON type, nested.
    static func shape(_ value: Any?) -> String {
        switch value {
        case let object as [String: Any]:
            return "{" + object.keys.sorted().map { "\($0):\(shape(object[$0]))" }.joined(separator: ",") + "}"
        case let array as [Any]:
            return "[" + Set(array.map { shape($0) }).sorted().joined(separator: "|") + "]"
        case is NSNull: return "null"
        case let number as NSNumber: return String(cString: number.objCType) == "c" ? "bool" : "number"
        case is String: return "string"
        default: return "?"
        }
    }

    /// The two-sample Kolmogorov–Smirnov statistic: the largest gap between the samples'
    /// empirical distribution functions.
    static func ksStatistic(_ a: [Double], _ b: [Double]) -> Double {
        let x = a.sorted()
        let y = b.sorted()
        var i = 0
        var j = 0
        var gap = 0.0
        while i < x.count && j < y.count {
            let value = min(x[i], y[j])
            while i < x.count && x[i] <= value { i += 1 }
            while j < y.count && y[j] <= value { j += 1 }
            gap = max(gap, abs(Double(i) / Double(x.count) - Double(j) / Double(y.count)))
        }
        return gap
    }

    /// Sends, each timed from request to reply, adding every reply's and view's shape.
    static func sample(_ bob: RawChatClient, _ channel: String, label: String, count: Int, latencies: inout [Double],
                       shapes: inout Set<String>, views: inout Set<String>) throws {
        for n in 0..<count {
            let started = DispatchTime.now().uptimeNanoseconds
            let reply = try bob.request("message.send", ["channelId": channel, "text": "\(label) \(n)",
                                                         "clientMessageId": "\(label)-\(n)"])
            latencies.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6)
            shapes.insert(shape(reply))
            #expect(reply["type"] as? String == "ok", "\(reply)")
        }
        views.insert(shape(try bob.ok("channel.get", ["channelId": channel])))
        views.insert(shape(try bob.ok("channel.list")))
        views.insert(shape(try bob.ok("message.history", ["channelId": channel, "limit": 5])))
        views.insert(shape(try bob.ok("message.changes", ["channelId": channel, "afterVersion": 0, "limit": 5])))
        views.insert(shape(try bob.ok("me")))
    }

    @Test("200 sends unbanned and 200 shadow-banned, interleaved in rounds: the same reply and view shapes, latencies from one distribution, no event tells")
    func indistinguishable() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let channel = try alice.createGroup(["bob", "carol"])
        _ = try bob.takeEvents("channel.updated")
        // Warm up both paths the samples take.
        for n in 0..<50 { _ = try bob.send(channel, "warm-up \(n)") }
        // Forty rounds of 5 sends unbanned, then 5 shadow-banned: the machine's drift (and a
        // busy neighbour's bursts) fall on both samples alike.
        var open: (latencies: [Double], shapes: Set<String>, views: Set<String>) = ([], [], [])
        var banned: (latencies: [Double], shapes: Set<String>, views: Set<String>) = ([], [], [])
        for round in 0..<40 {
            try Self.sample(bob, channel, label: "before-\(round)", count: 5, latencies: &open.latencies,
                            shapes: &open.shapes, views: &open.views)
            _ = try alice.ok("channel.ban", ["channelId": channel, "userId": "bob", "shadow": true])
            try Self.sample(bob, channel, label: "after-\(round)", count: 5, latencies: &banned.latencies,
                            shapes: &banned.shapes, views: &banned.views)
            _ = try alice.ok("channel.unban", ["channelId": channel, "userId": "bob"])
        }
        #expect(open.shapes == banned.shapes, "reply shapes differ: \(open.shapes.symmetricDifference(banned.shapes))")
        #expect(open.shapes.count == 1)
        #expect(open.views == banned.views, "view shapes differ: \(open.views.symmetricDifference(banned.views))")
        #expect(try bob.takeEvents("channel.updated").isEmpty, "no event about the ban reaches bob")
        let before = open
        let after = banned
        let statistic = Self.ksStatistic(before.latencies, after.latencies)
        // The critical value of the two-sample test at α = 0.001 for 200 + 200 samples.
        let critical = 1.95 * (2.0 / 200).squareRoot()
        let medians = (before.latencies.sorted()[100], after.latencies.sorted()[100])
        #expect(statistic < critical, "latencies tell the ban apart: D = \(statistic), medians \(medians) ms")
        // And the others saw none of it.
        let carolTexts = try carol.fullHistory(channel).texts
        #expect(carolTexts.filter { $0.hasPrefix("after") }.isEmpty)
        #expect(carolTexts.filter { $0.hasPrefix("before") }.count == 200)
        #expect(try bob.fullHistory(channel).texts.filter { $0.hasPrefix("after") }.count == 200)
    }
}
