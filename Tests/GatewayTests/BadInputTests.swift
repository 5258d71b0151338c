import Foundation
import Testing
import WebSocket
@testable import Gateway

/// PROTOCOL.md §2: frames, ids, and requests the gateway cannot use.
@Suite("Bad input on a chat connection")
struct BadInputTests {
    private func error(_ raw: String) -> (id: Any?, code: String?) {
        let reply = parseJSONObject(raw)
        #expect(reply["type"] as? String == "error", "reply: \(raw)")
        let error = reply["error"] as? [String: Any]
        #expect(error?["message"] is String, "reply: \(raw)")
        return (reply["id"], error?["code"] as? String)
    }

    /// The connection still answers a request.
    private func expectUsable(_ client: RawChatClient, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let me = try client.ok("me")
        #expect(me["user"] is [String: Any], sourceLocation: sourceLocation)
    }

    @Test("a binary message closes the connection with 1003", arguments: [false, true])
    func binaryCloses(tls: Bool) async throws {
        let gateway = try await TestGateway.chat(tls: tls)
        let alice = try await gateway.connect("alice")
        try expectUsable(alice)
        try alice.connection.write(alice.connection.webSocket.encodeBinary(Array(#"{"id":1,"type":"me"}"#.utf8)))
        #expect(try alice.connection.nextClose() == .unsupportedData)
    }

    @Test("not JSON: ERR_BAD_REQUEST with id null; the connection stays open")
    func notJSON() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        for text in ["hello", "{\"id\":3,", "[1,2,3]", "42", "\"me\"", "{\"id\":4 \"type\":\"me\"}"] {
            let (id, code) = error(try alice.rawReply(text))
            #expect(code == "ERR_BAD_REQUEST", "\(text)")
            #expect(id is NSNull, "\(text): id \(String(describing: id))")
            try expectUsable(alice)
        }
    }

    @Test("no type: ERR_BAD_REQUEST echoing the id")
    func missingType() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        var (id, code) = error(try alice.rawReply(#"{"id":5}"#))
        #expect(code == "ERR_BAD_REQUEST")
        #expect(id as? Int == 5)
        (id, code) = error(try alice.rawReply(#"{"id":"x6","type":7}"#))
        #expect(code == "ERR_BAD_REQUEST")
        #expect(id as? String == "x6")
        try expectUsable(alice)
    }

    @Test("a field of the wrong type: ERR_BAD_REQUEST, connection usable")
    func wrongFieldType() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let cases = [
            #"{"id":10,"type":"user.get","userId":42}"#,
            #"{"id":11,"type":"user.list","limit":"ten"}"#,
            #"{"id":12,"type":"user.list","userIds":"alice"}"#,
            #"{"id":13,"type":"message.send","channelId":"c","text":5}"#,
            #"{"id":14,"type":"message.history","channelId":"c","afterSeq":"1"}"#,
            #"{"id":15,"type":"channel.update","channelId":"c","pushFromBlockedUsers":"yes"}"#,
            #"{"id":16,"type":"user.update","metadata":{"a":1}}"#,
            #"{"id":17,"type":"user.get"}"#,
            #"{"id":18,"type":"me","params":"nope"}"#,
        ]
        for (offset, text) in cases.enumerated() {
            let (id, code) = error(try alice.rawReply(text))
            #expect(code == "ERR_BAD_REQUEST", "\(text)")
            #expect(id as? Int == 10 + offset, "\(text)")
        }
        try expectUsable(alice)
    }

    @Test("the id is echoed exactly: integers (even past 2^53) and strings")
    func idEcho() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let big = try alice.rawReply(#"{"id":9007199254740993,"type":"me"}"#)
        #expect(big.contains(#""id":9007199254740993"#), "\(big)")
        #expect(parseJSONObject(big)["type"] as? String == "ok")
        let text = try alice.rawReply(#"{"id":"req-\u00e9-1","type":"me"}"#)
        #expect(parseJSONObject(text)["id"] as? String == "req-é-1")
        let zero = try alice.rawReply(#"{"type":"me","id":0}"#)
        #expect(zero.contains(#""id":0"#), "\(zero)")
        let failing = try alice.rawReply(#"{"id":"e-1","type":"user.get","userId":"nobody"}"#)
        #expect(parseJSONObject(failing)["id"] as? String == "e-1")
        // An id that is neither number nor string cannot be read: null.
        let object = try alice.rawReply(#"{"id":{"n":1},"type":"nope"}"#)
        #expect(parseJSONObject(object)["id"] is NSNull, "\(object)")
    }

    @Test("an unknown type: ERR_UNKNOWN_TYPE; the connection stays open")
    func unknownType() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let reply = try alice.request("message.explode", ["channelId": "c"])
        #expect(reply["type"] as? String == "error")
        #expect((reply["error"] as? [String: Any])?["code"] as? String == "ERR_UNKNOWN_TYPE")
        #expect(reply["id"] as? Int != nil)
        try expectUsable(alice)
    }

    @Test("params may sit in a params object (channel.create type there)")
    func paramsObject() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let open = parseJSONObject(try alice.rawReply(#"{"id":1,"type":"channel.create","params":{"type":"open","name":"lobby"}}"#))
        let channel = open["result"] as? [String: Any]
        #expect(channel?["type"] as? String == "open")
        #expect(channel?["name"] as? String == "lobby")
        let group = parseJSONObject(try alice.rawReply(#"{"id":2,"type":"channel.create","params":{"userIds":[]}}"#))
        #expect((group["result"] as? [String: Any])?["type"] as? String == "group")
        let me = parseJSONObject(try alice.rawReply(#"{"id":3,"type":"user.get","params":{"userId":"alice"}}"#))
        #expect((me["result"] as? [String: Any])?["id"] as? String == "alice")
    }
}
