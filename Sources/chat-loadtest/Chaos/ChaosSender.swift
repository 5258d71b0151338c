import EventLoop
import Foundation
import WebSocket
import WebSocketDriver

/// One chaos user's WebSocket on the run's event loop. While sending, it keeps up to
/// `window` `message.send`s unanswered, each with its own `clientMessageId`, and
/// records every `ok`. When the gateway dies under it, the sends still unanswered are
/// kept and go out first, unchanged, on its next connection: the retry PROTOCOL.md §4
/// promises is safe. It also reads for the run: each channel's last seq after a
/// restart, and whole histories at the end.
///
/// Everything here runs on the loop; `ChaosRun` reads and drives it with `loop.queue.sync`.
final class ChaosSender: ConnectionHandler, @unchecked Sendable {
    enum Phase {
        case idle, connecting, upgrading, open, closed
    }

    /// What a sender sends when it has room in its window.
    enum Mode {
        case paused
        /// Retries first, then new messages (the load between kills).
        case everything
        /// Retries only (after the last restart, to settle every send).
        case retriesOnly
    }

    /// What an outstanding request id stands for.
    private enum Request {
        case send(ChaosSend)
        case lastSeq(channel: Int)
        case history(channel: Int)
        case catchUp(channel: Int)
    }

    let index: Int
    let userID: String
    private let token: String
    private let channelIDs: [String]
    /// The nodes it may connect to: it starts on `index % count` and moves to the next one
    /// at each reconnect, as an app behind a load balancer lands anywhere.
    private let addresses: [GatewayAddress]
    private var addressIndex: Int
    private var address: GatewayAddress { addresses[addressIndex] }
    private let loop: EventLoop
    private let window: Int
    /// Nanoseconds between new messages (0: as fast as the window allows).
    private let sendInterval: UInt64
    private var nextNewSendAt: UInt64 = 0
    private var pumpScheduled = false
    /// Set: live deliveries are tracked and caught up (a cluster run).
    private(set) var deliveries: ChaosDeliveries?
    /// Where each of its channels' ids sits in `channelIDs`.
    private let channelIndex: [String: Int]

    private(set) var phase = Phase.idle
    private var connection: SocketConnection?
    /// The current connection's WebSocket.
    private var webSocket: WebSocketClientConnection?
    private let decoder = JSONDecoder()

    var mode = Mode.paused
    private var nextRequestID = 1
    private var nextMessageNumber = 0
    private var outstanding: [Int: Request] = [:]
    private var sendsInFlight = 0
    /// Sends whose connection died before their reply, or that got an error: sent again first.
    private var retryQueue: [ChaosSend] = []

    private(set) var acks: [ChaosAck] = []
    private(set) var counters = ChaosCounters()
    /// Each channel's last seq read right after the latest restart: a retried send answered
    /// with a seq at or below it had been stored before the kill.
    var storedBefore: [Int64] = []
    /// Answers to `requestLastSeqs`, by channel index.
    private(set) var lastSeqs: [Int: Int64] = [:]
    /// Pages read by `readHistories`, by channel index, and the channels read to the end.
    private(set) var histories: [[ChaosWire.StoredMessage]]
    private(set) var historiesDone: Set<Int> = []
    /// Connects that failed and why (the run retries them until its deadline).
    private(set) var lastConnectFailure: String?
    /// Replies the run did not expect (history errors, undecodable frames): each fails the run.
    private(set) var problems: [String] = []

    init(index: Int, userID: String, token: String, channelIDs: [String], addresses: [GatewayAddress], loop: EventLoop,
         window: Int, sendInterval: UInt64 = 0, tracksDeliveries: Bool = false) {
        self.index = index
        self.userID = userID
        self.token = token
        self.channelIDs = channelIDs
        self.addresses = addresses
        addressIndex = index % addresses.count
        self.loop = loop
        self.window = window
        self.sendInterval = sendInterval
        // Spread the senders' first messages over one interval.
        nextNewSendAt = sendInterval == 0 ? 0 : MonotonicClock.now() + UInt64.random(in: 0..<sendInterval)
        deliveries = tracksDeliveries ? ChaosDeliveries(channels: channelIDs.count) : nil
        channelIndex = Dictionary(channelIDs.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        histories = Array(repeating: [], count: channelIDs.count)
        storedBefore = Array(repeating: 0, count: channelIDs.count)
    }

    /// Messages issued and not yet acknowledged: in flight, or waiting to be sent again.
    var unresolved: Int { sendsInFlight + retryQueue.count }

    var isOpen: Bool { phase == .open }

    var channelCount: Int { channelIDs.count }

    /// Whether a new connection may be started: never connected, or the last one is gone.
    var needsConnection: Bool { phase == .idle || phase == .closed }

    // MARK: connecting

    /// Opens a new connection with the user's token (the old one, if any, is gone).
    func connect() {
        if phase == .closed { addressIndex = (addressIndex + 1) % addresses.count }
        phase = .connecting
        // Messages up to 8 MiB: a 100-message history page fits.
        webSocket = WebSocketClientConnection(handshake: address.upgrade(token: token), maxMessageBytes: 8 << 20)
        do {
            connection = try SocketConnection.connect(host: address.host, port: address.port, loop: loop, tls: nil,
                                                      handler: self)
        } catch {
            phase = .closed
            lastConnectFailure = "\(error)"
        }
    }

    func connectionDidConnect(_ connection: SocketConnection) {
        phase = .upgrading
        webSocket?.start(on: connection)
    }

    func connection(_ connection: SocketConnection, didRead bytes: UnsafeRawBufferPointer) {
        guard phase == .upgrading || phase == .open, let webSocket else { return }
        webSocket.receive(bytes, on: connection) { event in
            switch event {
            case .opened:
                phase = .open
                if let channels = deliveries?.reconnected() { for channel in channels { requestCatchUp(channel) } }
            case .refused(let refusal):
                lastConnectFailure = "upgrade answered \(refusal)"
                connection.closeNow()
            case .text(let payload):
                if !ChaosWire.isEvent(payload) {
                    handleReply(payload)
                } else if deliveries != nil {
                    handleEvent(payload)
                }
            case .ended, .binary:
                break
            }
        }
    }

    /// The gateway died (or closed us): every send without a reply waits to be sent again.
    func connectionDidClose(_ connection: SocketConnection) {
        guard connection === self.connection else { return }
        if phase == .connecting || phase == .upgrading { lastConnectFailure = "closed before the upgrade finished" }
        for request in outstanding.values {
            guard case .send(let send) = request else { continue }
            counters.unansweredAtKill += 1
            retryQueue.append(send)
        }
        // Oldest first, so a message retried twice goes out before younger ones.
        retryQueue.sort { $0.clientMessageID.count != $1.clientMessageID.count
            ? $0.clientMessageID.count < $1.clientMessageID.count : $0.clientMessageID < $1.clientMessageID }
        outstanding.removeAll()
        sendsInFlight = 0
        deliveries?.connectionLost()
        phase = .closed
        self.connection = nil
    }

    /// A normal close (1000), at the end of the run.
    func close() {
        guard phase == .open, let connection, let webSocket else { return }
        webSocket.close(code: .normal, on: connection)
    }

    // MARK: sending

    /// Fills the window: retries first, then (in `.everything`) new messages, round-robin over the channels.
    func pump() {
        guard phase == .open, let connection, let webSocket, mode != .paused else { return }
        while sendsInFlight < window {
            var send: ChaosSend
            if !retryQueue.isEmpty {
                send = retryQueue.removeFirst()
            } else if mode == .everything {
                if sendInterval > 0 {
                    let now = MonotonicClock.now()
                    guard now >= nextNewSendAt else {
                        schedulePump(after: nextNewSendAt - now)
                        break
                    }
                    nextNewSendAt = max(nextNewSendAt + sendInterval, now)
                }
                send = newSend()
            } else {
                break
            }
            if send.attempts >= 1 {
                counters.retryFrames += 1
                if send.attempts == 1 { counters.retried += 1 }
            }
            send.attempts += 1
            let id = nextID()
            outstanding[id] = .send(send)
            sendsInFlight += 1
            counters.sent += 1
            let payload = ChaosWire.send(id: id, channelID: channelIDs[send.channelIndex], text: send.text,
                                         clientMessageID: send.clientMessageID)
            webSocket.send(text: payload, on: connection)
        }
    }

    private func schedulePump(after nanoseconds: UInt64) {
        guard !pumpScheduled else { return }
        pumpScheduled = true
        loop.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [self] in
            pumpScheduled = false
            pump()
        }
    }

    private func newSend() -> ChaosSend {
        let number = nextMessageNumber
        nextMessageNumber += 1
        return ChaosSend(clientMessageID: "\(userID)-\(number)", channelIndex: (index + number) % channelIDs.count,
                         text: "chaos \(userID) #\(number)")
    }

    private func nextID() -> Int {
        defer { nextRequestID += 1 }
        return nextRequestID
    }

    // MARK: reading for the run

    /// Asks for each channel's newest message; the answers land in `lastSeqs`.
    func requestLastSeqs() {
        lastSeqs = [:]
        guard phase == .open, let connection, let webSocket else { return }
        for channel in channelIDs.indices {
            let id = nextID()
            outstanding[id] = .lastSeq(channel: channel)
            webSocket.send(text: ChaosWire.lastMessage(id: id, channelID: channelIDs[channel]), on: connection)
        }
    }

    /// Reads every channel's whole history forward, page by page, into `histories`.
    func readHistories() {
        histories = Array(repeating: [], count: channelIDs.count)
        historiesDone = []
        for channel in channelIDs.indices { requestPage(channel, cursor: nil) }
    }

    private func requestPage(_ channel: Int, cursor: String?) {
        guard phase == .open, let connection, let webSocket else { return }
        let id = nextID()
        outstanding[id] = .history(channel: channel)
        webSocket.send(text: ChaosWire.historyPage(id: id, channelID: channelIDs[channel], cursor: cursor), on: connection)
    }

    // MARK: live deliveries (cluster runs)

    private func handleEvent(_ payload: [UInt8]) {
        guard let event = try? decoder.decode(ChaosWire.Event.self, from: Data(payload)) else {
            problems.append("undecodable event: \(String(decoding: payload.prefix(200), as: UTF8.self))")
            return
        }
        switch event.event {
        case "message.new":
            guard let id = event.data?.channelId, let seq = event.data?.seq, let channel = channelIndex[id] else { return }
            if let again = deliveries?.saw(seq, in: channel, live: true) { requestCatchUp(again) }
        case "session.resync":
            let channels = (event.data?.channelIds ?? []).compactMap { channelIndex[$0] }
            for channel in deliveries?.resync(channels) ?? [] { requestCatchUp(channel) }
        default:
            break
        }
    }

    private func requestCatchUp(_ channel: Int, after: Int64? = nil) {
        guard phase == .open, let connection, let webSocket, let deliveries else { return }
        let id = nextID()
        outstanding[id] = .catchUp(channel: channel)
        webSocket.send(text: ChaosWire.historyAfter(id: id, channelID: channelIDs[channel],
                                                    afterSeq: after ?? deliveries.afterSeq(channel)), on: connection)
    }

    private func handleReply(_ payload: [UInt8]) {
        guard let reply = try? decoder.decode(ChaosWire.Reply.self, from: Data(payload)),
              let id = reply.id, let request = outstanding.removeValue(forKey: id) else {
            problems.append("unexpected frame: \(String(decoding: payload.prefix(200), as: UTF8.self))")
            return
        }
        switch request {
        case .send(let send):
            sendsInFlight -= 1
            settle(send, reply)
            pump()
        case .lastSeq(let channel):
            guard reply.type == "ok", let messages = reply.result?.messages else {
                problems.append("last message of \(channelIDs[channel]): \(reply.error?.code ?? reply.type)")
                return
            }
            lastSeqs[channel] = messages.last?.seq ?? 0
        case .history(let channel):
            guard reply.type == "ok", let result = reply.result, let messages = result.messages else {
                problems.append("history of \(channelIDs[channel]): \(reply.error?.code ?? reply.type)")
                historiesDone.insert(channel)
                return
            }
            histories[channel].append(contentsOf: messages)
            if let next = result.next {
                requestPage(channel, cursor: next)
            } else {
                historiesDone.insert(channel)
            }
        case .catchUp(let channel):
            guard reply.type == "ok", let messages = reply.result?.messages else {
                // A node without its database answers ERR_INTERNAL: read again after a pause.
                if let again = deliveries?.caughtUp(channel, seqs: [], fullPage: false).again {
                    requestCatchUp(again)
                    return
                }
                loop.queue.asyncAfter(deadline: .now() + .milliseconds(200)) { [self] in
                    if let channel = deliveries?.catchUp(channel) { requestCatchUp(channel) }
                }
                return
            }
            let step = deliveries?.caughtUp(channel, seqs: messages.map(\.seq),
                                            fullPage: messages.count == ChaosWire.catchUpPage)
            if let next = step?.next { requestCatchUp(channel, after: next) }
            if let again = step?.again { requestCatchUp(again) }
        }
    }

    /// Records the `ok` of a send, or keeps the send for a later retry after an error.
    private func settle(_ send: ChaosSend, _ reply: ChaosWire.Reply) {
        guard reply.type == "ok", let message = reply.result?.message else {
            counters.errors += 1
            retryQueue.append(send)
            // Not at once: a gateway that keeps failing must not be hammered in a loop.
            loop.queue.asyncAfter(deadline: .now() + .milliseconds(50)) { [self] in pump() }
            return
        }
        if message.clientMessageId != send.clientMessageID || message.text != send.text || message.senderId != userID
            || message.channelId != channelIDs[send.channelIndex] {
            counters.mismatched += 1
        }
        counters.acked += 1
        if send.attempts > 1 {
            if message.seq <= storedBefore[send.channelIndex] {
                counters.retriesAlreadyStored += 1
            } else {
                counters.retriesNewlyStored += 1
            }
        }
        _ = deliveries?.saw(message.seq, in: send.channelIndex, live: false)
        acks.append(ChaosAck(channelIndex: send.channelIndex, seq: message.seq, messageID: message.id,
                             clientMessageID: send.clientMessageID, senderIndex: index))
    }
}
