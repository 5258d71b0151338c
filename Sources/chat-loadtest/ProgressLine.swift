/// The live line on standard error, once a second.
final class ProgressLine {
    private let members: Int
    private var start: UInt64 = 0
    private var last = LoopCounters()
    private var lastTime: UInt64 = 0

    init(members: Int) {
        self.members = members
    }

    func reset(at time: UInt64) {
        start = time
        lastTime = time
        last = LoopCounters()
    }

    func printConnecting(_ c: LoopCounters) {
        Console.error("chat-loadtest: connected \(c.connected)/\(members), failed \(c.connectFailed)")
    }

    func print(_ phase: String, _ c: LoopCounters, at time: UInt64) {
        let seconds = Double(time - lastTime) / 1e9
        let sentRate = seconds > 0 ? Double(c.sent - last.sent) / seconds : 0
        let deliveryRate = seconds > 0 ? Double(c.deliveries - last.deliveries) / seconds : 0
        var line = "[\(Format.fixed(Double(time - start) / 1e9, 0))s \(phase)] sent \(Format.grouped(c.sent))"
        line += " (\(Format.grouped(Int(sentRate)))/s) acked \(Format.grouped(c.acked)) in flight \(c.inFlight)"
        line += " deliveries \(Format.grouped(c.deliveries)) (\(Format.grouped(Int(deliveryRate)))/s)"
        if c.errors > 0 { line += " errors \(c.errors)" }
        if c.duplicates > 0 { line += " duplicates \(c.duplicates)" }
        if c.disconnected > 0 { line += " disconnected \(c.disconnected)" }
        Console.error(line)
        last = c
        lastTime = time
    }
}
