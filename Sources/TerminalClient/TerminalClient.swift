import ChatCore
import Dispatch
import EventLoop
import Foundation
import WebSocket
import WebSocketDriver

/// `chat-gateway client`: a line-based terminal client. Every frame from the
/// gateway is printed as one line; every input line is a command (see `help`)
/// or raw request JSON.
public final class TerminalClient: ConnectionHandler, @unchecked Sendable {
    private let url: URL
    private let token: String
    private let loop = EventLoop(index: 0)
    private var connection: SocketConnection?
    private let webSocket: WebSocketClientConnection
    private var nextID = 1
    private let finished = DispatchSemaphore(value: 0)
    /// The session ended with a normal close (1000, 1001): the user quit, or the gateway went
    /// away in order. A refused handshake or token, a protocol error, a gateway that could not
    /// be reached or that vanished leave it false.
    private var endedCleanly = false

    public static let help = """
        commands: /me  /users  /create USER[,USER…] [NAME]  /open NAME  /join CHANNEL  /leave CHANNEL
                  /channels  /send CHANNEL TEXT…  /history CHANNEL [AFTER_SEQ]  /block USER  /unblock USER
                  /blocked  /quit    — or a raw JSON request, e.g. {"type":"me"}
        """

    public init(url: URL, token: String) {
        self.url = url
        self.token = token
        // The token goes in the first message, not the URL (proxies log URLs: PROTOCOL.md §1).
        var path = url.path.isEmpty ? "/v1/ws" : url.path
        path += "?auth=message"
        if let query = url.query { path += "&" + query }
        webSocket = WebSocketClientConnection(handshake: WebSocketClientHandshake(host: url.host ?? "localhost", target: path),
                                              maxMessageBytes: 1 << 24)
    }

    /// Connects, then reads commands from standard input until EOF or /quit; the exit
    /// status: 0 after a normal close, 1 otherwise (refused, unreachable, cut off).
    public func run() throws -> Int32 {
        guard let host = url.host, let scheme = url.scheme, scheme == "ws" || scheme == "wss" else {
            throw ChatError(.badRequest, "url must be ws://HOST:PORT or wss://HOST:PORT")
        }
        let tls = scheme == "wss" ? try TLSContext.insecureClient() : nil
        let port = url.port ?? (tls == nil ? 80 : 443)
        connection = try SocketConnection.connect(host: host, port: port, loop: loop, tls: tls, handler: self)
        let input = Thread { [self] in
            while let line = readLine() {
                if line == "/quit" { break }
                let text = line
                loop.execute { [self] in submit(text) }
            }
            loop.execute { [self] in
                guard let connection else { return }
                if webSocket.isOpen {
                    // The user quit a session that was open: a normal end.
                    endedCleanly = true
                    webSocket.close(code: .normal, on: connection)
                } else {
                    connection.close()
                }
            }
        }
        input.start()
        finished.wait()
        return loop.queue.sync { endedCleanly } ? 0 : 1
    }

    public func connectionDidConnect(_ connection: SocketConnection) {
        webSocket.start(on: connection)
    }

    public func connection(_ connection: SocketConnection, didRead bytes: UnsafeRawBufferPointer) {
        webSocket.receive(bytes, on: connection) { event in
            switch event {
            case .opened:
                var auth = JSONWriter()
                auth.beginObject()
                auth.key("id"); auth.string("auth")
                auth.key("type"); auth.string("auth")
                auth.key("token"); auth.string(token)
                auth.endObject()
                webSocket.send(text: auth.bytes, on: connection)
                emit("connected; type help for commands")
            case .refused(.status(let status, let body)):
                emit("handshake failed: HTTP \(status) \(String(decoding: body, as: UTF8.self))")
                connection.close()
            case .refused(let refusal):
                emit("handshake failed: \(refusal)")
                connection.close()
            case .text(let payload): emit(String(decoding: payload, as: UTF8.self))
            case .ended(.closed(let code, let reason)):
                endedCleanly = code == .normal || code == .goingAway
                emit("closed \(code?.rawValue ?? 1005) \(reason)")
            case .ended(.failed(let error)): emit("protocol error \(error)")
            case .ended(.pingTimeout), .binary: break
            }
        }
    }

    public func connectionDidClose(_ connection: SocketConnection) {
        emit("disconnected")
        finished.signal()
    }

    private func submit(_ line: String) {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return }
        if trimmed == "help" || trimmed == "/help" {
            emit(Self.help)
            return
        }
        let json: String
        if trimmed.hasPrefix("{") {
            json = trimmed
        } else if let request = command(trimmed) {
            json = request
        } else {
            emit("unknown command; type help")
            return
        }
        guard webSocket.isOpen, let connection else {
            emit("not connected yet")
            return
        }
        emit("> \(json)")
        webSocket.send(text: Array(json.utf8), on: connection)
    }

    /// One line to standard output, unbuffered so it shows while input is pending.
    private func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Turns a slash command into request JSON.
    private func command(_ line: String) -> String? {
        let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard let name = words.first else { return nil }
        let id = nextID
        nextID += 1
        var w = JSONWriter()
        w.beginObject()
        w.key("id"); w.int(id)
        func list(_ text: String) { w.beginArray(); for item in text.split(separator: ",") { w.string(String(item)) }; w.endArray() }
        switch (name, words.count) {
        case ("/me", 1): w.key("type"); w.string("me")
        case ("/users", 1): w.key("type"); w.string("user.list")
        case ("/channels", 1): w.key("type"); w.string("channel.list")
        case ("/blocked", 1): w.key("type"); w.string("user.blocked.list")
        case ("/create", 2...):
            w.key("type"); w.string("channel.create")
            w.key("userIds"); list(words[1])
            if words.count > 2 { w.key("name"); w.string(words[2...].joined(separator: " ")) }
        case ("/open", 2...):
            w.key("type"); w.string("channel.create")
            w.key("channelType"); w.string("open")
            w.key("name"); w.string(words[1...].joined(separator: " "))
        case ("/join", 2): w.key("type"); w.string("channel.join"); w.key("channelId"); w.string(words[1])
        case ("/leave", 2): w.key("type"); w.string("channel.leave"); w.key("channelId"); w.string(words[1])
        case ("/send", 3...):
            w.key("type"); w.string("message.send")
            w.key("channelId"); w.string(words[1])
            w.key("text"); w.string(words[2...].joined(separator: " "))
        case ("/history", 2), ("/history", 3):
            w.key("type"); w.string("message.history")
            w.key("channelId"); w.string(words[1])
            if words.count == 3, let after = Int(words[2]) { w.key("afterSeq"); w.int(after) }
        case ("/block", 2): w.key("type"); w.string("user.block"); w.key("userIds"); list(words[1])
        case ("/unblock", 2): w.key("type"); w.string("user.unblock"); w.key("userIds"); list(words[1])
        default: return nil
        }
        w.endObject()
        return w.text
    }
}
