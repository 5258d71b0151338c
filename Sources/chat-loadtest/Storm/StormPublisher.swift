import Dispatch
import EventLoop

/// A member of every storm channel that sends while the clients listen or are away:
/// `message.send` round-robin over the channels, a few in flight, within the gateway's
/// per-connection budget; a send answered ERR_RATE_LIMITED goes again later with the same
/// `clientMessageId`. Notes each channel's highest acknowledged seq and how many messages
/// it stored there.
final class StormPublisher: StormConnection, @unchecked Sendable {
    let index: Int
    let channelIDs: [String]
    /// Unique to the run: `clientMessageId`s are remembered per user across runs.
    private let runTag: String
    private let textSize: Int
    private let window: Int
    private var budget: StormRequestBudget
    /// Per channel: the highest seq acknowledged, and how many sends were acknowledged.
    private(set) var lastSeq: [Int64]
    private(set) var acked: [Int]
    private(set) var failedSends = 0
    private var batch: [(channel: Int, serial: Int)] = []
    private var nextInBatch = 0
    private var retryQueue: [Int] = []
    private var inFlight: [Int: Int] = [:]
    private var settled = 0
    private var serial = 0
    private var requestID = 0
    private var pumpScheduled = false
    private var batchPhase: StormPhase?

    init(index: Int, loop: EventLoop, address: GatewayAddress, tls: TLSContext?, token: String, channelIDs: [String],
         runTag: String, textSize: Int, window: Int, budget: StormRequestBudget) {
        self.index = index
        self.channelIDs = channelIDs
        self.runTag = runTag
        self.textSize = textSize
        self.window = window
        self.budget = budget
        lastSeq = Array(repeating: 0, count: channelIDs.count)
        acked = Array(repeating: 0, count: channelIDs.count)
        super.init(loop: loop, address: address, tls: tls, token: token)
    }

    /// Sends `count` messages; `phase` hears when every one is acknowledged or refused.
    func publish(_ count: Int, in phase: StormPhase) {
        guard state == .open else {
            phase.noteFailure("publisher not connected")
            phase.finish(ok: false)
            return
        }
        batch = (0..<count).map { k in (channel: (serial + k + index) % channelIDs.count, serial: serial + k) }
        serial += count
        nextInBatch = 0
        settled = 0
        retryQueue = []
        batchPhase = phase
        if count == 0 {
            finishBatch()
        } else {
            pump()
        }
    }

    private func pump() {
        while inFlight.count < window, !retryQueue.isEmpty || nextInBatch < batch.count {
            let wait = budget.take(now: MonotonicClock.now())
            guard wait == 0 else {
                schedulePump(afterNanoseconds: wait)
                return
            }
            let item: Int
            if retryQueue.isEmpty {
                item = nextInBatch
                nextInBatch += 1
            } else {
                item = retryQueue.removeFirst()
            }
            sendItem(item)
        }
    }

    private func schedulePump(afterNanoseconds wait: UInt64) {
        guard !pumpScheduled else { return }
        pumpScheduled = true
        loop.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(wait))) { [self] in
            pumpScheduled = false
            pump()
        }
    }

    private func sendItem(_ item: Int) {
        let (channel, serial) = batch[item]
        requestID += 1
        inFlight[requestID] = item
        var text = "storm p=\(index) n=\(serial)"
        if text.utf8.count < textSize { text += " " + String(repeating: "x", count: max(0, textSize - text.utf8.count - 1)) }
        send("{\"id\":\(requestID),\"type\":\"message.send\",\"channelId\":\(JSONText.quote(channelIDs[channel])),"
            + "\"text\":\(JSONText.quote(text)),\"clientMessageId\":\"\(runTag)-p\(index)-\(serial)\"}")
    }

    override func received(_ frame: StormFrame) {
        guard case .reply(let id, let ok) = frame.kind, let item = inFlight.removeValue(forKey: id) else { return }
        let channel = batch[item].channel
        if ok, let seq = frame.firstSeq {
            lastSeq[channel] = max(lastSeq[channel], seq)
            acked[channel] += 1
            settled += 1
        } else if frame.errorCode == "ERR_RATE_LIMITED" {
            batchPhase?.rateLimited.add(1, ordering: .relaxed)
            retryQueue.append(item)
            schedulePump(afterNanoseconds: UInt64(max(1, frame.retryAfterMs ?? 100)) * 1_000_000)
            return
        } else {
            batchPhase?.noteFailure("message.send: \(frame.errorCode ?? String(frame.text.prefix(120)))")
            failedSends += 1
            settled += 1
        }
        if settled == batch.count { finishBatch() } else { pump() }
    }

    override func lost(_ reason: String) {
        guard let phase = batchPhase else { return }
        batchPhase = nil
        phase.noteFailure("publisher: \(reason)")
        phase.finish(ok: false)
    }

    private func finishBatch() {
        guard let phase = batchPhase else { return }
        batchPhase = nil
        phase.finish(ok: failedSends == 0)
    }
}
