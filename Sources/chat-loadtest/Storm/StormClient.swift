import Dispatch
import EventLoop

/// One storm client, a member of one channel: notes the `seq` of every message it gets,
/// live (`message.new`) or from history, and after a reconnect catches up with
/// `message.history` from `afterSeq` = the last seq it saw, following `next` until it is
/// null (docs/PROTOCOL.md "History paging"), one request at a time within the gateway's
/// per-connection budget.
final class StormClient: StormConnection, @unchecked Sendable {
    let channelID: String
    let pageLimit: Int
    private let budgetPerSecond: Double
    private let budgetBurst: Int
    private(set) var seen = StormSeqs()
    /// Seqs received a second time.
    private(set) var duplicates = 0
    /// `message.new` of another channel, or without a seq.
    private(set) var foreign = 0
    /// How an open connection ended that this side did not end.
    private(set) var lostReason: String?
    private var budget: StormRequestBudget
    private var catchUpPhase: StormPhase?
    private var requestID = 0
    /// The cursor of the page asked for (nil: the first, by `afterSeq`).
    private var pageCursor: String?

    init(loop: EventLoop, address: GatewayAddress, tls: TLSContext?, token: String, channelID: String,
         pageLimit: Int, budgetPerSecond: Double, budgetBurst: Int) {
        self.channelID = channelID
        self.pageLimit = pageLimit
        self.budgetPerSecond = budgetPerSecond
        self.budgetBurst = budgetBurst
        budget = StormRequestBudget(perSecond: budgetPerSecond, burst: budgetBurst)
        super.init(loop: loop, address: address, tls: tls, token: token)
    }

    private func record(_ seq: Int64) {
        if !seen.insert(seq) { duplicates += 1 }
    }

    override func received(_ frame: StormFrame) {
        switch frame.kind {
        case .messageNew:
            guard frame.channelID == channelID, let seq = frame.firstSeq else {
                foreign += 1
                return
            }
            record(seq)
        case .reply(let id, let ok):
            guard catchUpPhase != nil, id == requestID else { return }
            if ok { takePage(frame) } else { pageRefused(frame) }
        case .other:
            break
        }
    }

    override func lost(_ reason: String) {
        lostReason = reason
        if let phase = catchUpPhase {
            catchUpPhase = nil
            phase.noteFailure("catch-up: \(reason)")
            phase.finish(ok: false)
        }
    }

    // MARK: catching up

    /// Pages forward from the last seq seen until `next` is null (call on the loop).
    func catchUp(in phase: StormPhase) {
        guard state == .open else {
            phase.noteFailure("catch-up: not connected")
            phase.finish(ok: false)
            return
        }
        catchUpPhase = phase
        budget = StormRequestBudget(perSecond: budgetPerSecond, burst: budgetBurst)  // a new connection's budget
        requestPage(cursor: nil)
    }

    private func requestPage(cursor: String?) {
        guard catchUpPhase != nil, state == .open else { return }
        let wait = budget.take(now: MonotonicClock.now())
        if wait > 0 {
            loop.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(wait))) { [self] in requestPage(cursor: cursor) }
            return
        }
        requestID += 1
        pageCursor = cursor
        var json = "{\"id\":\(requestID),\"type\":\"message.history\",\"channelId\":\(JSONText.quote(channelID)),"
        if let cursor {
            json += "\"cursor\":\(JSONText.quote(cursor)),"
        } else {
            json += "\"afterSeq\":\(seen.highest),"
        }
        json += "\"limit\":\(pageLimit)}"
        send(json)
    }

    private func takePage(_ frame: StormFrame) {
        guard let phase = catchUpPhase else { return }
        phase.pages.add(1, ordering: .relaxed)
        frame.forEachSeq(record)
        switch frame.next {
        case .some(.some(let cursor)):
            requestPage(cursor: cursor)
        case .some(.none):
            catchUpPhase = nil
            phase.finish(ok: true)
        case .none:
            catchUpPhase = nil
            phase.noteFailure("history reply without next")
            phase.finish(ok: false)
        }
    }

    private func pageRefused(_ frame: StormFrame) {
        guard let phase = catchUpPhase else { return }
        if frame.errorCode == "ERR_RATE_LIMITED" {
            phase.rateLimited.add(1, ordering: .relaxed)
            let cursor = pageCursor
            let retry = max(1, frame.retryAfterMs ?? 100)
            loop.queue.asyncAfter(deadline: .now() + .milliseconds(retry)) { [self] in requestPage(cursor: cursor) }
            return
        }
        catchUpPhase = nil
        phase.noteFailure("history: \(frame.errorCode ?? String(frame.text.prefix(120)))")
        phase.finish(ok: false)
    }
}
