/// One step of a `room --ramp` run.
struct RampStep: Sendable {
    var rate: Double
    var deliveriesPerSecond: Double
    var latency: LatencyHistogram
    /// Deliveries lost over the whole run so far (steps share the connections).
    var lostSoFar: Int
    var errors: Int
    var drained: Bool

    var p99: Double { latency.milliseconds(atPercentile: 99) }

    func passes(boundMs: Double) -> Bool {
        latency.count > 0 && p99 <= boundMs && lostSoFar == 0 && errors == 0 && drained
    }

    func summary(boundMs: Double) -> String {
        var text = "\(Format.grouped(Int(deliveriesPerSecond))) deliveries/s, p50 \(Format.fixed(latency.milliseconds(atPercentile: 50), 2)) ms, "
        text += "p99 \(Format.fixed(p99, 2)) ms"
        if lostSoFar > 0 { text += ", loss \(lostSoFar)" }
        if errors > 0 { text += ", errors \(errors)" }
        if !drained { text += ", not drained" }
        return text + (passes(boundMs: boundMs) ? " — within the bound" : " — over the bound")
    }
}

/// The result of a ramp: every step, and the highest rate that stayed within the bound.
struct RampReport {
    var steps: [RampStep]
    var boundMs: Double
    var members: Int

    private var best: RampStep? { steps.last { $0.passes(boundMs: boundMs) } }

    func table() -> String {
        var lines = ["rate msgs/s  deliveries/s  p50 ms    p99 ms    result"]
        for step in steps {
            lines.append(Format.padded(Format.grouped(Int(step.rate)), 11) + "  " + Format.padded(Format.grouped(Int(step.deliveriesPerSecond)), 12)
                + "  " + Format.padded(Format.fixed(step.latency.milliseconds(atPercentile: 50), 2), 8)
                + "  " + Format.padded(Format.fixed(step.p99, 2), 8) + "  " + (step.passes(boundMs: boundMs) ? "ok" : "over"))
        }
        if let best {
            lines.append("highest rate with p99 ≤ \(Format.fixed(boundMs, 0)) ms and no loss: \(Format.grouped(Int(best.rate))) msgs/s "
                + "(\(Format.grouped(Int(best.deliveriesPerSecond))) deliveries/s to \(members) members)")
        } else {
            lines.append("no step stayed within p99 ≤ \(Format.fixed(boundMs, 0)) ms with no loss")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    func json() -> String {
        let steps = self.steps.map { step in
            "{\"rate\":\(Format.fixed(step.rate, 1)),\"deliveriesPerSecond\":\(Format.fixed(step.deliveriesPerSecond, 1)),"
                + "\"p50\":\(Format.fixed(step.latency.milliseconds(atPercentile: 50), 3)),\"p99\":\(Format.fixed(step.p99, 3)),"
                + "\"loss\":\(step.lostSoFar),\"errors\":\(step.errors),\"passes\":\(step.passes(boundMs: boundMs))}"
        }
        let bestRate = best.map { Format.fixed($0.rate, 1) } ?? "null"
        let bestDeliveries = best.map { Format.fixed($0.deliveriesPerSecond, 1) } ?? "null"
        return "{\"scenario\":\"room-ramp\",\"members\":\(members),\"boundMs\":\(Format.fixed(boundMs, 3)),"
            + "\"bestRate\":\(bestRate),\"bestDeliveriesPerSecond\":\(bestDeliveries),\"steps\":[\(steps.joined(separator: ","))]}\n"
    }
}
