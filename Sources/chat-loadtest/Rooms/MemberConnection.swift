import EventLoop
import WebSocket
import WebSocketDriver

/// One member's WebSocket: the upgrade, then every `message.new` it receives is
/// checked off and timed; a publisher also sends `message.send` and counts the
/// replies. Lives on one loop. The receive path reads the stamp without a JSON
/// parse, the clock once per read, and allocates only what the frame decoder does.
final class MemberConnection: ConnectionHandler, @unchecked Sendable {
    private enum Phase {
        case idle, connecting, upgrading, open, closed
    }

    let index: Int
    let recorder: LoopRecorder
    let publisher: PublisherState?
    private let token: String
    private var phase = Phase.idle
    private var connection: SocketConnection?
    private var webSocket: WebSocketClientConnection?
    private var received: ReceivedBits
    private var closingOnPurpose = false
    private var startedAt: UInt64 = 0
    /// From the plan, kept as plain numbers: the receive path reads them per delivery.
    private let publishers: Int
    private let groupSize: Int
    /// `--lifecycle`: the newest seq of the tool's messages this member received, its own
    /// newest acknowledged seq, whether its reaction to `reactedSeq` stands, its seconds so far.
    private var newestSeq: UInt64 = 0
    private var ownSeq: UInt64 = 0
    private var reactedSeq: UInt64 = 0
    private var lifecycleTick = 0

    init(index: Int, token: String, recorder: LoopRecorder, publisher: PublisherState?) {
        self.index = index
        self.token = token
        self.recorder = recorder
        self.publisher = publisher
        received = ReceivedBits(publishers: recorder.plan.sendersPerChannel)
        publishers = recorder.plan.publishers
        groupSize = recorder.plan.groupSize
    }

    var isOpen: Bool { phase == .open }

    /// Starts connecting (call on the recorder's loop).
    func start() {
        let plan = recorder.plan
        phase = .connecting
        startedAt = MonotonicClock.now()
        let address = plan.address(of: index)
        let client = WebSocketClientConnection(handshake: address.upgrade(token: token, deflate: plan.deflate),
                                               maxMessageBytes: 1 << 20)
        if plan.deflate { client.messageInflater = recorder.inflateMemo }
        webSocket = client
        do {
            connection = try SocketConnection.connect(host: address.host, port: address.port,
                                                      loop: recorder.loop, tls: plan.tls, handler: self)
        } catch {
            phase = .closed
            recorder.recordConnectFailure("\(error)")
        }
    }

    // MARK: ConnectionHandler

    func connectionDidConnect(_ connection: SocketConnection) {
        phase = .upgrading
        webSocket?.start(on: connection)
    }

    func connection(_ connection: SocketConnection, didRead bytes: UnsafeRawBufferPointer) {
        guard phase == .upgrading || phase == .open, let webSocket else { return }
        // One clock read for every message of this read, taken after they were all decoded.
        var now: UInt64 = 0
        webSocket.receive(bytes, on: connection) { event in
            switch event {
            case .text(let payload):
                if now == 0 { now = MonotonicClock.now() }
                if phase == .open { handleText(payload, receivedAt: now) }
            case .opened(let deflate):
                opened(deflate: deflate, on: connection)
            case .refused(let refusal):
                failUpgrade("\(refusal)", connection)
            case .ended(.closed(let code, let reason)):
                if !closingOnPurpose {
                    recorder.counters.disconnected += 1
                    recorder.recordClose("close \(code?.rawValue ?? 1005) \(reason)")
                }
                closingOnPurpose = true
            case .ended(.failed(let error)):
                recorder.counters.disconnected += 1
                recorder.recordClose("protocol error: \(error)")
                closingOnPurpose = true
            case .ended(.pingTimeout), .binary:
                break
            }
        }
    }

    func connectionDidClose(_ connection: SocketConnection) {
        switch phase {
        case .connecting, .upgrading:
            recorder.recordConnectFailure(phase == .connecting ? "connect refused or reset" : "closed during upgrade")
        case .open where !closingOnPurpose:
            recorder.counters.disconnected += 1
            recorder.recordClose("transport closed")
        case .idle, .open, .closed:
            break
        }
        if let publisher { recorder.counters.inFlight -= publisher.inFlight }
        phase = .closed
        self.connection = nil
    }

    // MARK: upgrade

    private func opened(deflate: DeflateParameters?, on connection: SocketConnection) {
        if recorder.plan.deflate && deflate == nil {
            failUpgrade("permessage-deflate declined", connection)
            return
        }
        phase = .open
        recorder.counters.connected += 1
        recorder.handshakeLatency.record(nanoseconds: MonotonicClock.now() &- startedAt)
    }

    private func failUpgrade(_ reason: String, _ connection: SocketConnection) {
        phase = .closed
        recorder.recordConnectFailure(reason)
        connection.close()
    }

    // MARK: receiving

    private func handleText(_ payload: [UInt8], receivedAt now: UInt64) {
        let finding = payload.withUnsafeBytes { FrameScanner.scan($0) }
        switch finding {
        case .delivery(let stamp, let from, let sequence):
            guard from >= 0, from < publishers, sequence >= 0, from / groupSize == index / groupSize else {
                recorder.counters.foreign += 1
                return
            }
            if from == publisher?.index {
                recorder.counters.echoes += 1  // the sender's own connection must not get its message.new
                return
            }
            if received.insert(publisher: from % groupSize, sequence: sequence) {
                recorder.recordDelivery(publisher: from, sequence: sequence, stamp: stamp, receivedAt: now)
                if recorder.lifecycle != nil, let seq = payload.withUnsafeBytes({ FrameScanner.seq($0) }) {
                    newestSeq = max(newestSeq, seq)
                }
                if recorder.readAndType && now < recorder.schedule.sendEnd,
                   let seq = payload.withUnsafeBytes({ FrameScanner.seq($0) }) {
                    sendChatter(ChatterRequest.markRead(channelID: recorder.plan.channelID(of: index), seq: seq))
                    recorder.counters.markReadSent += 1
                }
            } else {
                recorder.counters.duplicates += 1
            }
        case .reply(let id, let ok):
            guard let publisher, let sentAt = publisher.finishSend(id, ok: ok) else {
                recorder.counters.otherFrames += 1
                return
            }
            recorder.recordReply(sentAt: sentAt, receivedAt: now, ok: ok, payload: payload)
            if ok, recorder.lifecycle != nil, let seq = payload.withUnsafeBytes({ FrameScanner.seq($0) }) { ownSeq = max(ownSeq, seq) }
            if recorder.schedule.isSaturating && now < recorder.schedule.sendEnd {
                sendMessage(stamp: MonotonicClock.now())
            }
        case .foreignDelivery:
            if recorder.lifecycle != nil {
                recorder.counters.replyDeliveries += 1  // a reply of --lifecycle
            } else {
                recorder.counters.foreign += 1
            }
        case .other:
            if recorder.lifecycle != nil {
                switch payload.withUnsafeBytes({ FrameScanner.lifecycleEvent($0) }) {
                case .reaction?:
                    recorder.counters.reactionEvents += 1
                    recorder.counters.reactionEventBytes += payload.count
                    return
                case .updated?:
                    recorder.counters.updateEvents += 1
                    return
                case nil:
                    break
                }
            }
            if let ok = payload.withUnsafeBytes({ FrameScanner.chatterReplyIsOK($0) }) {
                if !ok {
                    recorder.counters.chatterErrors += 1
                    if recorder.errorSamples.count < 5 {
                        recorder.errorSamples.append(String(decoding: payload.prefix(300), as: UTF8.self))
                    }
                }
            } else {
                recorder.counters.otherFrames += 1
                recorder.counters.otherFrameBytes += payload.count
            }
        }
    }

    /// `--read-and-type`: this member's `typing.start` of the second.
    func sendTyping() {
        guard phase == .open else { return }
        sendChatter(ChatterRequest.typingStart(channelID: recorder.plan.channelID(of: index)))
        recorder.counters.typingSent += 1
    }

    /// `--lifecycle`: this member's reaction, edit or reply of the second, on the newest
    /// message of the tool it received (nothing before it received one).
    func sendLifecycle(_ mix: LifecycleMix) {
        guard phase == .open, newestSeq > 0 else { return }
        let channel = recorder.plan.channelID(of: index)
        let tick = lifecycleTick
        lifecycleTick += 1
        var action = mix.action(tick: tick)
        if action == .edit && ownSeq == 0 { action = .react }
        switch action {
        case .react:
            // Toggle: a reaction to the newest message, taken back the next second if that is still the newest.
            let add = reactedSeq != newestSeq
            sendChatter(ChatterRequest.reaction(channelID: channel, seq: add ? newestSeq : reactedSeq, add: add))
            reactedSeq = add ? newestSeq : 0
            recorder.counters.reactionsSent += 1
        case .edit:
            sendChatter(ChatterRequest.edit(channelID: channel, seq: ownSeq))
            recorder.counters.editsSent += 1
        case .reply:
            sendChatter(ChatterRequest.reply(channelID: channel, parentSeq: newestSeq))
            recorder.counters.repliesSent += 1
        }
    }

    private func sendChatter(_ request: [UInt8]) {
        guard phase == .open, let connection, let webSocket else { return }
        if recorder.plan.writesEachFrame {
            connection.writeNow(request.withUnsafeBytes { webSocket.encodeText($0) })
        } else {
            webSocket.send(text: request, on: connection)
        }
    }

    // MARK: sending

    /// Sends the publisher's next `message.send`, its text stamped `stamp`.
    func sendMessage(stamp: UInt64) {
        guard phase == .open, let connection, let publisher, let webSocket else { return }
        let sequence = publisher.beginSend(at: MonotonicClock.now())
        let frame = publisher.encoder.encode(sequence: sequence, stamp: stamp) { webSocket.encodeText($0) }
        if recorder.plan.writesEachFrame { connection.writeNow(frame) } else { connection.write(frame) }
        recorder.recordSend(stamp: stamp)
    }

    /// A normal close (1000), at the end of the run.
    func close() {
        guard phase == .open, let connection, let webSocket else { return }
        closingOnPurpose = true
        webSocket.close(code: .normal, on: connection)
    }
}
