import Testing
@testable import ChatCore

struct RequestDecoderTests {
    private func decode(_ text: String) -> Result<Request, RequestFailure> {
        RequestDecoder.decode(Array(text.utf8))
    }

    /// The command, or nil (and a recorded issue) when decoding failed.
    private func command(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> Command? {
        switch decode(text) {
        case .success(let request): return request.command
        case .failure(let failure):
            Issue.record("\(text) failed: \(failure.error.code.rawValue) \(failure.error.message)", sourceLocation: sourceLocation)
            return nil
        }
    }

    /// The failure, or nil (and a recorded issue) when decoding succeeded.
    private func failure(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> RequestFailure? {
        switch decode(text) {
        case .success(let request):
            Issue.record("\(text) decoded to \(request.command), expected an error", sourceLocation: sourceLocation)
            return nil
        case .failure(let failure): return failure
        }
    }

    // MARK: every request type of §4, top-level and `params` forms

    struct Case: Sendable, CustomTestStringConvertible {
        let type: String
        /// The parameters as JSON members, without braces.
        let params: String
        let expected: Command
        var testDescription: String { "\(type) \(params)" }
    }

    static let cases: [Case] = [
        Case(type: "me", params: "", expected: .me),
        Case(type: "user.get", params: #""userId":"bob""#, expected: .userGet("bob")),
        Case(type: "user.list", params: "",
             expected: .userList(userIDs: nil, metadataKey: nil, metadataValues: nil, limit: 20, cursor: nil)),
        Case(type: "user.list", params: #""userIds":["a","b"],"metadataKey":"team","metadataValues":["x","y"],"limit":7,"cursor":"C""#,
             expected: .userList(userIDs: ["a", "b"], metadataKey: "team", metadataValues: ["x", "y"], limit: 7, cursor: "C")),
        Case(type: "user.list", params: #""userIds":null,"cursor":null,"limit":null"#,
             expected: .userList(userIDs: nil, metadataKey: nil, metadataValues: nil, limit: 20, cursor: nil)),
        Case(type: "user.update", params: "", expected: .userUpdate(name: nil, image: nil, metadata: nil)),
        Case(type: "user.update", params: #""name":"Bob","image":"http://x/y.png","metadata":{"k":"v","team":"t"}"#,
             expected: .userUpdate(name: "Bob", image: "http://x/y.png", metadata: ["k": "v", "team": "t"])),
        Case(type: "user.block", params: #""userIds":["b"]"#, expected: .userBlock(["b"])),
        Case(type: "user.unblock", params: #""userIds":["b","c"]"#, expected: .userUnblock(["b", "c"])),
        Case(type: "user.blocked.list", params: "",
             expected: .userBlockedList(direction: .byMe, limit: 20, search: nil, userIDs: nil, cursor: nil)),
        Case(type: "user.blocked.list", params: #""direction":"me","limit":100,"search":"Bo","userIds":["b"],"cursor":"K""#,
             expected: .userBlockedList(direction: .me, limit: 100, search: "Bo", userIDs: ["b"], cursor: "K")),
        Case(type: "user.blocked.list", params: #""direction":"both","limit":1"#,
             expected: .userBlockedList(direction: .both, limit: 1, search: nil, userIDs: nil, cursor: nil)),
        Case(type: "user.blocked.list", params: #""direction":"byMe""#,
             expected: .userBlockedList(direction: .byMe, limit: 20, search: nil, userIDs: nil, cursor: nil)),
        Case(type: "channel.create", params: #""userIds":["b"]"#,
             expected: .channelCreate(type: .group, userIDs: ["b"], name: nil, distinct: false, pushFromBlockedUsers: nil)),
        Case(type: "channel.create", params: "",
             expected: .channelCreate(type: .group, userIDs: [], name: nil, distinct: false, pushFromBlockedUsers: nil)),
        Case(type: "channel.create", params: #""channelType":"open","name":"lobby","pushFromBlockedUsers":true"#,
             expected: .channelCreate(type: .open, userIDs: [], name: "lobby", distinct: false, pushFromBlockedUsers: true)),
        Case(type: "channel.create", params: #""channelType":"group","userIds":["b","c"],"distinct":true,"pushFromBlockedUsers":false"#,
             expected: .channelCreate(type: .group, userIDs: ["b", "c"], name: nil, distinct: true, pushFromBlockedUsers: false)),
        Case(type: "channel.get", params: #""channelId":"c_1""#, expected: .channelGet("c_1")),
        Case(type: "channel.list", params: "", expected: .channelList(limit: 20, cursor: nil)),
        Case(type: "channel.list", params: #""limit":50,"cursor":"N""#, expected: .channelList(limit: 50, cursor: "N")),
        Case(type: "channel.invite", params: #""channelId":"c_1","userIds":["d"]"#, expected: .channelInvite("c_1", ["d"])),
        Case(type: "channel.join", params: #""channelId":"c_2""#, expected: .channelJoin("c_2")),
        Case(type: "channel.leave", params: #""channelId":"c_2""#, expected: .channelLeave("c_2")),
        Case(type: "channel.update", params: #""channelId":"c_3""#,
             expected: .channelUpdate("c_3", name: nil, pushFromBlockedUsers: nil)),
        Case(type: "channel.update", params: #""channelId":"c_3","name":"n","pushFromBlockedUsers":true"#,
             expected: .channelUpdate("c_3", name: "n", pushFromBlockedUsers: true)),
        Case(type: "message.send", params: #""channelId":"c_1","text":"hi""#,
             expected: .messageSend("c_1", text: "hi", dataJSON: nil, clientMessageID: nil)),
        Case(type: "message.send", params: #""channelId":"c_1","text":"hi","data":null,"clientMessageId":"m-1""#,
             expected: .messageSend("c_1", text: "hi", dataJSON: nil, clientMessageID: "m-1")),
        Case(type: "message.send", params: #""channelId":"c_1","text":"é\n😀","data":{"z":1.50,"a":[true,null,"\u0041"],"o":{}}"#,
             expected: .messageSend("c_1", text: "é\n😀", dataJSON: #"{"z":1.50,"a":[true,null,"A"],"o":{}}"#, clientMessageID: nil)),
        Case(type: "message.history", params: #""channelId":"c_1""#,
             expected: .messageHistory("c_1", beforeSeq: nil, afterSeq: nil, limit: 20)),
        Case(type: "message.history", params: #""channelId":"c_1","beforeSeq":10,"limit":5"#,
             expected: .messageHistory("c_1", beforeSeq: 10, afterSeq: nil, limit: 5)),
        Case(type: "message.history", params: #""channelId":"c_1","afterSeq":0"#,
             expected: .messageHistory("c_1", beforeSeq: nil, afterSeq: 0, limit: 20)),
        Case(type: "message.history", params: #""channelId":"c_1","afterSeq":9007199254740993,"beforeSeq":null"#,
             expected: .messageHistory("c_1", beforeSeq: nil, afterSeq: 9_007_199_254_740_993, limit: 20)),
        // §15
        Case(type: "message.send", params: #""channelId":"c_1","text":"re","parentSeq":4,"mentionedUserIds":["a","b"]"#,
             expected: .messageSend("c_1", text: "re", dataJSON: nil, clientMessageID: nil, parentSeq: 4, mentionedUserIDs: ["a", "b"])),
        Case(type: "message.history", params: #""channelId":"c_1","parentSeq":4"#,
             expected: .messageHistory("c_1", beforeSeq: nil, afterSeq: nil, limit: 20, parentSeq: 4)),
        Case(type: "message.update", params: #""channelId":"c_1","seq":3,"text":"t""#,
             expected: .messageUpdate("c_1", seq: 3, MessageEdit(text: "t"))),
        Case(type: "message.update", params: #""channelId":"c_1","seq":3,"data":null"#,
             expected: .messageUpdate("c_1", seq: 3, MessageEdit(dataJSON: .some(nil)))),
        Case(type: "message.update", params: #""channelId":"c_1","seq":3,"data":{"k":1},"mentionedUserIds":[]"#,
             expected: .messageUpdate("c_1", seq: 3, MessageEdit(dataJSON: .some(#"{"k":1}"#), mentionedUserIDs: []))),
        Case(type: "message.delete", params: #""channelId":"c_1","seq":3"#, expected: .messageDelete("c_1", seq: 3)),
        Case(type: "reaction.add", params: #""channelId":"c_1","seq":3,"kind":"👍🏽""#,
             expected: .reactionAdd("c_1", seq: 3, kind: "👍🏽")),
        Case(type: "reaction.remove", params: #""channelId":"c_1","seq":3,"kind":"+1""#,
             expected: .reactionRemove("c_1", seq: 3, kind: "+1")),
        Case(type: "message.changes", params: #""channelId":"c_1","afterVersion":0,"limit":100"#,
             expected: .messageChanges("c_1", afterVersion: 0, limit: 100)),
    ]

    @Test("§15 requests refuse what they cannot take", arguments: [
        (#""channelId":"c","seq":1"#, "message.update", ErrorCode.badRequest),
        (#""channelId":"c","seq":0,"text":"t""#, "message.update", .badRequest),
        (#""channelId":"c","seq":1,"text":"""#, "message.update", .badRequest),
        (#""channelId":"c","seq":1,"mentionedUserIds":["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17","18","19","20","21","22","23","24","25","26"]"#,
         "message.update", .tooManyIDs),
        (#""channelId":"c","seq":1,"kind":"""#, "reaction.add", .badRequest),
        (#""channelId":"c","seq":1,"kind":"a\u0007""#, "reaction.add", .badRequest),
        (#""channelId":"c","seq":1,"kind":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa""#, "reaction.remove", .badRequest),
        (#""channelId":"c","seq":"1","kind":"x""#, "reaction.add", .badRequest),
        (#""channelId":"c""#, "message.delete", .badRequest),
        (#""channelId":"c","afterVersion":-1"#, "message.changes", .badRequest),
        (#""channelId":"c""#, "message.changes", .badRequest),
        (#""channelId":"c","afterVersion":0,"limit":0"#, "message.changes", .invalidLimit),
        (#""channelId":"c","text":"t","parentSeq":0"#, "message.send", .badRequest),
    ] as [(String, String, ErrorCode)])
    func lifecycleRefusals(_ params: String, _ type: String, _ code: ErrorCode) {
        let text = #"{"id":1,"type":"\#(type)",\#(params)}"#
        guard case .failure(let failure) = RequestDecoder.decode(Array(text.utf8)) else {
            Issue.record("\(text) decoded")
            return
        }
        #expect(failure.error.code == code, "\(text)")
    }

    @Test("top-level form", arguments: cases)
    func topLevel(_ c: Case) {
        let text = c.params.isEmpty ? #"{"id":1,"type":"\#(c.type)"}"# : #"{"id":1,"type":"\#(c.type)",\#(c.params)}"#
        #expect(command(text) == c.expected)
    }

    @Test("params object form", arguments: cases)
    func paramsForm(_ c: Case) {
        let text = #"{"id":1,"type":"\#(c.type)","params":{\#(c.params)}}"#
        #expect(command(text) == c.expected)
    }

    @Test("params: null is the same as no params")
    func nullParams() {
        #expect(command(#"{"type":"channel.get","channelId":"c","params":null}"#) == .channelGet("c"))
    }

    @Test("params not an object is ERR_BAD_REQUEST", arguments: [#""x""#, "[]", "1", "true"])
    func paramsNotObject(_ params: String) {
        let f = failure(#"{"id":5,"type":"me","params":\#(params)}"#)
        #expect(f?.error.code == .badRequest)
        #expect(f?.id == .number("5"))
    }

    @Test("every §4 request type is known")
    func allTypesKnown() {
        let types = ["me", "user.get", "user.list", "user.update", "user.block", "user.unblock", "user.blocked.list",
                     "channel.create", "channel.get", "channel.list", "channel.invite", "channel.join", "channel.leave",
                     "channel.update", "message.send", "message.history",
                     "message.update", "message.delete", "reaction.add", "reaction.remove", "message.changes"]
        for type in types {
            if case .failure(let f) = decode(#"{"type":"\#(type)"}"#) {
                #expect(f.error.code != .unknownType, "\(type)")
            }
        }
        #expect(Set(Self.cases.map(\.type)) == Set(types))
    }

    // MARK: channel.create type

    @Test("channel.create: params.type is the channel type; channelType works in both forms")
    func channelCreateType() {
        #expect(command(#"{"type":"channel.create","params":{"type":"open","name":"x"}}"#)
            == .channelCreate(type: .open, userIDs: [], name: "x", distinct: false, pushFromBlockedUsers: nil))
        #expect(command(#"{"type":"channel.create","params":{"type":"group","userIds":["b"]}}"#)
            == .channelCreate(type: .group, userIDs: ["b"], name: nil, distinct: false, pushFromBlockedUsers: nil))
        #expect(command(#"{"type":"channel.create","params":{"channelType":"open"}}"#)
            == .channelCreate(type: .open, userIDs: [], name: nil, distinct: false, pushFromBlockedUsers: nil))
        #expect(command(#"{"type":"channel.create","channelType":"open"}"#)
            == .channelCreate(type: .open, userIDs: [], name: nil, distinct: false, pushFromBlockedUsers: nil))
        // The top-level `type` is the request type, not the channel type.
        #expect(command(#"{"type":"channel.create","userIds":["b"]}"#)
            == .channelCreate(type: .group, userIDs: ["b"], name: nil, distinct: false, pushFromBlockedUsers: nil))
    }

    @Test("channel.create: unknown or mistyped channel type is ERR_BAD_REQUEST", arguments: [
        #"{"type":"channel.create","channelType":"private"}"#,
        #"{"type":"channel.create","channelType":1}"#,
        #"{"type":"channel.create","params":{"type":"dm"}}"#,
        #"{"type":"channel.create","params":{"type":true}}"#,
        #"{"type":"channel.create","channelType":"Open"}"#,
    ])
    func channelCreateBadType(_ text: String) {
        #expect(failure(text)?.error.code == .badRequest)
    }

    // MARK: id

    @Test("id echo: integer lexeme preserved, strings, absent → null")
    func idEcho() throws {
        #expect(try decode(#"{"id":17,"type":"me"}"#).get().id == .number("17"))
        #expect(try decode(#"{"id":-0,"type":"me"}"#).get().id == .number("-0"))
        #expect(try decode(#"{"id":12345678901234567890123,"type":"me"}"#).get().id == .number("12345678901234567890123"))
        #expect(try decode(#"{"id":"req-1","type":"me"}"#).get().id == .string("req-1"))
        #expect(try decode(#"{"id":"","type":"me"}"#).get().id == .string(""))
        #expect(try decode(#"{"type":"me"}"#).get().id == .null)
        #expect(try decode(#"{"id":null,"type":"me"}"#).get().id == .null)
        #expect(try decode(#"{"id":1,"id":2,"type":"me"}"#).get().id == .number("2"))
        // An id of another type cannot be echoed as the client's id.
        #expect(try decode(#"{"id":{"a":1},"type":"me"}"#).get().id == .null)
        #expect(try decode(#"{"id":[1],"type":"me"}"#).get().id == .null)
        // Echoing the id writes back the same lexeme.
        let reply = WireEncoding.ok(id: try decode(#"{"id":1.50e3,"type":"me"}"#).get().id) { $0.null() }
        #expect(String(decoding: reply, as: UTF8.self).hasPrefix(#"{"id":1.50e3,"#))
    }

    // MARK: envelope errors

    @Test("not JSON → ERR_BAD_REQUEST with id null", arguments: [
        "", "x", #"{"id":1,"type":"me""#, #"{"id":1,"type":"me"} x"#, #"{'id':1}"#, "{\"id\":1,\"type\":\"m\u{1}e\"}",
    ])
    func notJSON(_ text: String) {
        let f = failure(text)
        #expect(f?.error.code == .badRequest)
        #expect(f?.id == .null)
    }

    @Test("invalid UTF-8 → ERR_BAD_REQUEST with id null")
    func invalidUTF8() {
        var bytes = Array(#"{"id":1,"type":"me","x":"#.utf8)
        bytes += [0x22, 0xFF, 0x22, 0x7D]
        guard case .failure(let f) = RequestDecoder.decode(bytes) else {
            Issue.record("must fail")
            return
        }
        #expect(f.error.code == .badRequest)
        #expect(f.id == .null)
    }

    @Test("not an object → ERR_BAD_REQUEST with id null", arguments: ["[]", #"[{"id":1,"type":"me"}]"#, "1", #""me""#, "null", "true"])
    func notObject(_ text: String) {
        let f = failure(text)
        #expect(f?.error.code == .badRequest)
        #expect(f?.id == .null)
    }

    @Test("missing or mistyped type → ERR_BAD_REQUEST with the id echoed")
    func badType() {
        for (text, id) in [
            (#"{"id":7}"#, JSONValue.number("7")),
            (#"{"id":"s","channelId":"c"}"#, .string("s")),
            (#"{"id":8,"type":null}"#, .number("8")),
            (#"{"id":9,"type":1}"#, .number("9")),
            (#"{"id":10,"type":["me"]}"#, .number("10")),
            (#"{"id":11,"type":{"name":"me"}}"#, .number("11")),
            (#"{"type":true}"#, .null),
            (#"{"params":{"type":"me"}}"#, .null),
        ] {
            let f = failure(text)
            #expect(f?.error.code == .badRequest, "\(text)")
            #expect(f?.id == id, "\(text)")
        }
    }

    @Test("unknown type → ERR_UNKNOWN_TYPE with the id echoed", arguments: [
        "nope", "", "ME", "message.Send", "user", "message.send ", "channel.delete",
    ])
    func unknownType(_ type: String) {
        let f = failure(#"{"id":"q","type":"\#(type)","limit":0}"#)
        #expect(f?.error.code == .unknownType)
        #expect(f?.id == .string("q"))
    }

    // MARK: field errors

    @Test("wrong field types → ERR_BAD_REQUEST", arguments: [
        #"{"type":"user.get","userId":1}"#,
        #"{"type":"user.get"}"#,
        #"{"type":"user.get","userId":null}"#,
        #"{"type":"user.list","userIds":"a"}"#,
        #"{"type":"user.list","userIds":[1]}"#,
        #"{"type":"user.list","userIds":["a",null]}"#,
        #"{"type":"user.list","cursor":5}"#,
        #"{"type":"user.list","limit":"20"}"#,
        #"{"type":"user.list","limit":20.5}"#,
        #"{"type":"user.list","limit":2e1}"#,
        #"{"type":"user.list","limit":true}"#,
        #"{"type":"user.list","metadataKey":1,"metadataValues":["x"]}"#,
        #"{"type":"user.list","metadataKey":"k","metadataValues":"x"}"#,
        #"{"type":"user.list","metadataKey":"k"}"#,
        #"{"type":"user.list","metadataValues":["x"]}"#,
        #"{"type":"user.update","name":1}"#,
        #"{"type":"user.update","image":false}"#,
        #"{"type":"user.update","metadata":{"k":1}}"#,
        #"{"type":"user.update","metadata":["k"]}"#,
        #"{"type":"user.block"}"#,
        #"{"type":"user.block","userIds":[]}"#,
        #"{"type":"user.block","userIds":"b"}"#,
        #"{"type":"user.unblock","userIds":[2]}"#,
        #"{"type":"user.blocked.list","direction":"them"}"#,
        #"{"type":"user.blocked.list","direction":1}"#,
        #"{"type":"user.blocked.list","search":1}"#,
        #"{"type":"channel.create","userIds":"b"}"#,
        #"{"type":"channel.create","distinct":"yes"}"#,
        #"{"type":"channel.create","pushFromBlockedUsers":1}"#,
        #"{"type":"channel.create","name":["n"]}"#,
        #"{"type":"channel.get"}"#,
        #"{"type":"channel.get","channelId":["c"]}"#,
        #"{"type":"channel.list","cursor":{}}"#,
        #"{"type":"channel.invite","channelId":"c"}"#,
        #"{"type":"channel.invite","channelId":"c","userIds":[]}"#,
        #"{"type":"channel.invite","userIds":["b"]}"#,
        #"{"type":"channel.join","channelId":1}"#,
        #"{"type":"channel.leave"}"#,
        #"{"type":"channel.update","channelId":"c","pushFromBlockedUsers":"true"}"#,
        #"{"type":"channel.update","channelId":"c","name":1}"#,
        #"{"type":"message.send","channelId":"c"}"#,
        #"{"type":"message.send","channelId":"c","text":1}"#,
        #"{"type":"message.send","text":"hi"}"#,
        #"{"type":"message.send","channelId":"c","text":"hi","clientMessageId":1}"#,
        #"{"type":"message.history"}"#,
        #"{"type":"message.history","channelId":"c","beforeSeq":"5"}"#,
        #"{"type":"message.history","channelId":"c","afterSeq":1.5}"#,
        #"{"type":"message.history","channelId":"c","afterSeq":99999999999999999999}"#,
    ])
    func wrongFieldType(_ text: String) {
        let withID = "{\"id\":3," + text.dropFirst()
        let f = failure(withID)
        #expect(f?.error.code == .badRequest)
        #expect(f?.id == .number("3"))
    }

    @Test("empty text → ERR_BAD_REQUEST")
    func emptyText() {
        #expect(failure(#"{"type":"message.send","channelId":"c","text":""}"#)?.error.code == .badRequest)
    }

    @Test("data not an object → ERR_BAD_REQUEST", arguments: [#"[]"#, #""s""#, "1", "true", #"[{"a":1}]"#])
    func dataNotObject(_ data: String) {
        #expect(failure(#"{"type":"message.send","channelId":"c","text":"t","data":\#(data)}"#)?.error.code == .badRequest)
    }

    @Test("beforeSeq and afterSeq together → ERR_BAD_REQUEST")
    func beforeAndAfter() {
        #expect(failure(#"{"type":"message.history","channelId":"c","beforeSeq":5,"afterSeq":1}"#)?.error.code == .badRequest)
        #expect(failure(#"{"type":"message.history","params":{"channelId":"c","beforeSeq":5,"afterSeq":1}}"#)?.error.code == .badRequest)
    }

    @Test("limit outside 1–100 → ERR_INVALID_LIMIT", arguments: [0, 101, -1, 1000, Int64.max] as [Int64])
    func invalidLimit(_ limit: Int64) {
        for type in ["user.list", "user.blocked.list", "channel.list"] {
            let f = failure(#"{"id":4,"type":"\#(type)","limit":\#(limit)}"#)
            #expect(f?.error.code == .invalidLimit, "\(type) limit \(limit)")
            #expect(f?.id == .number("4"))
        }
        #expect(failure(#"{"type":"message.history","channelId":"c","limit":\#(limit)}"#)?.error.code == .invalidLimit)
    }

    @Test("limit 1 and 100 are accepted")
    func limitBounds() {
        #expect(command(#"{"type":"channel.list","limit":1}"#) == .channelList(limit: 1, cursor: nil))
        #expect(command(#"{"type":"channel.list","limit":100}"#) == .channelList(limit: 100, cursor: nil))
        #expect(command(#"{"type":"message.history","channelId":"c","limit":100}"#)
            == .messageHistory("c", beforeSeq: nil, afterSeq: nil, limit: 100))
    }

    private func ids(_ count: Int) -> String {
        "[" + (0..<count).map { "\"u\($0)\"" }.joined(separator: ",") + "]"
    }

    @Test("user.list: 250 ids ok, 251 → ERR_TOO_MANY_IDS")
    func userListIDs() {
        let ok = command(#"{"type":"user.list","userIds":\#(ids(250))}"#)
        if case .userList(let userIDs, _, _, _, _)? = ok {
            #expect(userIDs?.count == 250)
        } else {
            Issue.record("expected userList, got \(String(describing: ok))")
        }
        let f = failure(#"{"id":"x","type":"user.list","userIds":\#(ids(251))}"#)
        #expect(f?.error.code == .tooManyIDs)
        #expect(f?.id == .string("x"))
    }

    @Test("user.block / user.unblock: 100 ids ok, 101 → ERR_TOO_MANY_IDS")
    func blockIDs() {
        for type in ["user.block", "user.unblock"] {
            switch command(#"{"type":"\#(type)","userIds":\#(ids(100))}"#) {
            case .userBlock(let list)?, .userUnblock(let list)?: #expect(list.count == 100)
            default: Issue.record("\(type) with 100 ids")
            }
            #expect(failure(#"{"type":"\#(type)","userIds":\#(ids(101))}"#)?.error.code == .tooManyIDs, "\(type)")
            #expect(failure(#"{"type":"\#(type)","params":{"userIds":\#(ids(101))}}"#)?.error.code == .tooManyIDs, "\(type)")
        }
    }

    @Test("params form ignores top-level fields")
    func paramsShadowsTopLevel() {
        #expect(command(#"{"type":"channel.get","channelId":"top","params":{"channelId":"inner"}}"#) == .channelGet("inner"))
    }

    @Test("decode from an UnsafeRawBufferPointer")
    func rawBuffer() {
        let bytes = Array(#"{"id":2,"type":"channel.get","channelId":"c"}"#.utf8)
        let result = bytes.withUnsafeBytes { RequestDecoder.decode($0) }
        #expect((try? result.get()) == Request(id: .number("2"), command: .channelGet("c")))
    }
}
