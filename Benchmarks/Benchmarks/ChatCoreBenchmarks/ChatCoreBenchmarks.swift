// Micro-benchmarks for ChatCore's per-message work: what the §6 limiters add to
// every message.send, and the JSON of a stored message (written once per message).
//
//   cd Benchmarks && swift package --disable-sandbox benchmark --target ChatCoreBenchmarks
//
// Each measured iteration runs `scaledIterations` operations, so `throughput`
// reads as operations per second and mallocs as mallocs per operation.
import Benchmark
import ChatCore

private let metrics: [BenchmarkMetric] = [.throughput, .wallClock, .mallocCountTotal]

private func configuration(_ scaling: BenchmarkScalingFactor) -> Benchmark.Configuration {
    .init(metrics: metrics, warmupIterations: 5, scalingFactor: scaling, maxDuration: .seconds(3), maxIterations: 100_000)
}

/// 10,000 users by their dense per-process numbers (the gateway keys its limiter by them).
private let users = (0..<10_000).map { UInt32($0 * 7919 % 10_000 + 1) }

/// Open channels by id.
private let channels = (0..<1_000).map { "c_01HF8Z2K9QW3X7V5T4R6Y\($0)" }

/// A stored message as `rooms` sends it: 64-byte text, a client message id, no lifecycle yet.
private let storedMessage = Message(
    id: "m_01HF8Z2K9QW3X7V5T4R6Y8N2PQ", channelID: "c_01HF8Z2K9QW3X7V5T4R6Y123", seq: 48_213, senderID: "u_4711",
    text: String(repeating: "t=1700000000000 p=12 n=345 ", count: 3).prefix(64).description,
    clientMessageID: "cm-4711-345", createdAt: 1_700_000_000_123, version: 52_006)

let benchmarks: @Sendable () -> Void = {
    // The JSON of one stored message (the `ok` result and the `message.new` payload share it).
    Benchmark("WireEncoding.write, one stored message", configuration: configuration(.mega)) { benchmark in
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            var w = JSONWriter(capacity: 512)
            WireEncoding.write(storedMessage, to: &w)
            blackHole(w.bytes)
        }
        benchmark.stopMeasurement()
    }

    // One admitted take for a user among 10,000 (limits out of reach, as in a benchmark run with the limiter on).
    Benchmark("TokenBucketLimiter.take, 10,000 users, admitted", configuration: configuration(.mega)) { benchmark in
        var limiter = TokenBucketLimiter<UInt32>(ratePerSecond: 1_000_000, burst: 1_000_000)
        var now: Milliseconds = 1_700_000_000_000
        var index = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(limiter.take(users[index], now: now))
            index += 1
            if index == users.count { index = 0; now += 1 }
        }
        benchmark.stopMeasurement()
    }

    // The default 5/s limit: most takes are rejected (a client hammering the gateway).
    Benchmark("TokenBucketLimiter.take, 10,000 users, mostly limited", configuration: configuration(.mega)) { benchmark in
        var limiter = TokenBucketLimiter<UInt32>(ratePerSecond: 5, burst: 5)
        var index = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(limiter.take(users[index], now: 1_700_000_000_000))
            index += 1
            if index == users.count { index = 0 }
        }
        benchmark.stopMeasurement()
    }

    Benchmark("SlidingWindowLimiter.admit, 1,000 open channels", configuration: configuration(.mega)) { benchmark in
        var window = SlidingWindowLimiter<String>(limit: 5)
        var now: Milliseconds = 1_700_000_000_000
        var index = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(window.admit(channels[index], now: now))
            index += 1
            if index == 1_000 { index = 0; now += 50 }
        }
        benchmark.stopMeasurement()
    }
}
