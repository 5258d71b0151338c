import ChatCore
import Testing
import WebSocket
@testable import Gateway

/// `AuthMessageExchange` on its own (sans-IO): what each message, tick and verdict leads to.
@Suite("Auth message exchange")
struct AuthMessageExchangeTests {
    private let record = SessionRecord(id: 7, userID: "alice", userNumber: 1, device: nil, hideBlocked: false,
                                       expiresAt: 1_000_000, loopIndex: 0)

    private func text(_ json: String) -> [UInt8] { Array(json.utf8) }

    private func errorCode(_ actions: [AuthMessageExchange.Action]) -> String? {
        guard actions.count == 1, case .send(let bytes) = actions[0],
              case .object(let reply)? = try? JSONParser.parse(bytes),
              case .object(let error)? = reply["error"], case .string(let code)? = error["code"] else { return nil }
        return code
    }

    @Test func authThenVerdictOpensWithTheHeldRequestsInOrder() {
        var exchange = AuthMessageExchange(now: 100, timeoutSeconds: 10)
        #expect(exchange.received(text(#"{"id":1,"type":"auth","token":"t"}"#)) == [.authenticate(token: "t")])
        #expect(exchange.received(text(#"{"id":2,"type":"me"}"#)) == [])
        #expect(exchange.received(text(#"{"id":3,"type":"channel.list"}"#)) == [])
        #expect(exchange.verdict(.success(record)) == [.open(record, requestID: .number("1"), held: [
            text(#"{"id":2,"type":"me"}"#), text(#"{"id":3,"type":"channel.list"}"#)])])
        #expect(exchange.isOpen)
        #expect(exchange.tick(200) == [], "an open session has no deadline")
    }

    @Test func theTokenMayComeInParams() {
        var exchange = AuthMessageExchange(now: 0, timeoutSeconds: 10)
        #expect(exchange.received(text(#"{"id":"a","type":"auth","params":{"token":"t"}}"#)) == [.authenticate(token: "t")])
    }

    @Test func requestsBeforeAuthAreRefusedThenTheConnectionCloses() {
        var exchange = AuthMessageExchange(now: 0, timeoutSeconds: 10)
        #expect(errorCode(exchange.received(text(#"{"id":1,"type":"me"}"#))) == "ERR_NOT_LOGGED_IN")
        #expect(errorCode(exchange.received(text("nope"))) == "ERR_BAD_REQUEST")
        #expect(errorCode(exchange.received(text(#"{"id":2,"type":"auth"}"#))) == "ERR_BAD_REQUEST")
        for _ in 3..<AuthMessageExchange.maxRequestsBeforeAuth {
            #expect(errorCode(exchange.received(text(#"{"id":3,"type":"me"}"#))) == "ERR_NOT_LOGGED_IN")
        }
        let last = exchange.received(text(#"{"id":4,"type":"me"}"#))
        guard case .close(let code, let reason)? = last.first else {
            Issue.record("not closed: \(last)")
            return
        }
        #expect(code == .policyViolation)
        #expect(reason.hasPrefix("ERR_NOT_LOGGED_IN"))
        #expect(exchange.received(text(#"{"id":5,"type":"auth","token":"t"}"#)) == [])
    }

    @Test func aRefusalClosesWithItsCodeAndReason() {
        for (refusal, code) in [(SessionRefusal(token: ChatError(.notLoggedIn, "invalid token")), 4004),
                                (SessionRefusal(token: ChatError(.tokenExpired, "token expired")), 4001),
                                (SessionRefusal(.deactivated, ChatError(.forbidden, "user is deactivated")), 4002),
                                (SessionRefusal(.banned, ChatError(.forbidden, "user is banned")), 4003),
                                (SessionRefusal(.tooManyConnections, ChatError(.forbidden, "30 live connections")), 4005)] {
            var exchange = AuthMessageExchange(now: 0, timeoutSeconds: 10)
            _ = exchange.received(text(#"{"id":1,"type":"auth","token":"t"}"#))
            #expect(exchange.verdict(.failure(refusal)) == [.close(CloseCode(UInt16(code)), reason: refusal.closeReason)])
            #expect(refusal.closeReason.hasPrefix(refusal.error.code.rawValue + ": "))
        }
    }

    @Test func noAuthByTheDeadlineCloses1008AndALateSessionIsReleased() {
        var exchange = AuthMessageExchange(now: 100, timeoutSeconds: 10)
        #expect(exchange.tick(109) == [])
        #expect(exchange.tick(110) == [.close(.policyViolation, reason: "ERR_NOT_LOGGED_IN: no auth within 10 s")])
        var verifying = AuthMessageExchange(now: 100, timeoutSeconds: 10)
        _ = verifying.received(text(#"{"id":1,"type":"auth","token":"t"}"#))
        #expect(verifying.tick(110) == [], "once auth came, its verdict is waited for")
        #expect(verifying.verdict(.success(record)).count == 1)
        var late = AuthMessageExchange(now: 100, timeoutSeconds: 10)
        _ = late.tick(110)
        #expect(late.received(text(#"{"id":1,"type":"auth","token":"t"}"#)) == [], "closed: too late")
        #expect(late.verdict(.success(record)) == [.release(record)])
        var gone = AuthMessageExchange(now: 0, timeoutSeconds: 10)
        _ = gone.received(text(#"{"id":1,"type":"auth","token":"t"}"#))
        gone.connectionClosed()
        #expect(gone.verdict(.success(record)) == [.release(record)])
        #expect(gone.verdict(.failure(SessionRefusal(token: ChatError(.notLoggedIn, "x")))) == [])
    }

    @Test func heldRequestsAreBounded() {
        var exchange = AuthMessageExchange(now: 0, timeoutSeconds: 10)
        _ = exchange.received(text(#"{"id":1,"type":"auth","token":"t"}"#))
        for id in 0..<AuthMessageExchange.maxHeldRequests {
            #expect(exchange.received(text(#"{"id":\#(id + 2),"type":"me"}"#)) == [])
        }
        #expect(errorCode(exchange.received(text(#"{"id":99,"type":"me"}"#))) == "ERR_RATE_LIMITED")
    }
}
