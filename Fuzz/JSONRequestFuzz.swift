// libFuzzer target: the JSON parser, the request decoder and the JSON writer
// (ChatCore), on arbitrary bytes as a client's text message would bring them.
//
// Invariants:
// - the parser agrees with itself: the [UInt8] and raw-pointer entry points give
//   the same result, an error's offset lies inside the input;
// - nesting: a value parsed with the default bound (32) has depth <= 32, parses
//   with maxDepth == its depth and fails with one less; a bound of 256 accepts
//   what 32 accepts, and what it accepts beyond that is deeper than 32;
// - the writer: a parsed value written with JSONWriter is valid UTF-8 without raw
//   control characters, parses back equal, and writing that again gives the same
//   bytes (numbers keep their lexeme, objects their key order and repeated keys);
// - the decoder: never succeeds where the parser fails or on a non-object (and
//   then answers ERR_BAD_REQUEST with id null); echoes the request's id when it is
//   a number, string or null; decodes the re-written document to the same result;
//   a decoded command is the one its `type` names and within its bounds
//   (limit 1-100, id counts, non-empty text, `data` an object that round-trips, seqs
//   of at least 1, at most 25 mentions, reaction kinds of 1-64 bytes without control
//   characters, an edit that changes something);
// - the replies: the error reply for a failure and the ok reply for a request
//   (WireEncoding) parse, and echo the id; a message.send written as a Message
//   carries its text and data back.
// Build and run with `scripts/fuzz JSONRequestFuzz`.
import ChatCore

private func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant violated: \(message())") }
}

/// Containers nested around the deepest value: 0 for a scalar, 1 for `[]`.
private func depth(_ value: JSONValue) -> Int {
    switch value {
    case .null, .bool, .number, .string: return 0
    case .array(let elements): return 1 + (elements.map(depth).max() ?? 0)
    case .object(let object): return 1 + (object.entries.map { depth($0.value) }.max() ?? 0)
    }
}

private func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int) -> Result<JSONValue, JSONParseError> {
    do throws(JSONParseError) { return .success(try JSONParser.parse(bytes, maxDepth: maxDepth)) } catch { return .failure(error) }
}

private func parse(_ bytes: [UInt8], maxDepth: Int = 256) -> Result<JSONValue, JSONParseError> {
    do throws(JSONParseError) { return .success(try JSONParser.parse(bytes, maxDepth: maxDepth)) } catch { return .failure(error) }
}

private func written(_ value: JSONValue) -> [UInt8] {
    var writer = JSONWriter()
    writer.value(value)
    return writer.bytes
}

/// Checks the parser's bounds and the writer's round trip; returns the value parsed with the default bound.
private func checkParser(_ input: UnsafeRawBufferPointer) -> JSONValue? {
    let bounded = parse(input, maxDepth: 32)
    check(bounded == parse(Array(input), maxDepth: 32), "the [UInt8] and pointer parsers disagree")
    let loose = parse(input, maxDepth: 256)
    if case .failure(let error) = bounded { check((0...input.count).contains(error.offset), "error offset \(error.offset) of \(input.count)") }
    switch (bounded, loose) {
    case (.success(let value), .success(let same)):
        check(value == same, "maxDepth 32 and 256 parse differently")
        let d = depth(value)
        check(d <= 32, "depth \(d) passed maxDepth 32")
        if d > 0 {
            check(parse(input, maxDepth: d) == .success(value), "depth \(d) fails with maxDepth \(d)")
            if case .success = parse(input, maxDepth: d - 1) { check(false, "depth \(d) passes maxDepth \(d - 1)") }
        }
    case (.success, .failure(let error)):
        check(false, "maxDepth 32 accepts what 256 rejects: \(error)")
    case (.failure, .success(let value)):
        check(depth(value) > 32, "maxDepth 32 rejects depth \(depth(value))")
    case (.failure, .failure):
        return nil
    }
    guard case .success(let value) = bounded else { return nil }
    let text = written(value)
    check(String(validating: text, as: UTF8.self) != nil, "the writer produced invalid UTF-8")
    check(!text.contains(where: { $0 < 0x20 }), "the writer left a raw control character")
    guard case .success(let reparsed) = parse(text) else { fatalError("written JSON does not parse: \(String(decoding: text, as: UTF8.self))") }
    check(reparsed == value, "written JSON parses to a different value")
    check(written(reparsed) == text, "writing is not stable")
    return value
}

/// The `type` that decodes to `command`.
private func typeName(_ command: Command) -> String {
    switch command {
    case .me: "me"
    case .userGet: "user.get"
    case .userList: "user.list"
    case .userUpdate: "user.update"
    case .userBlock: "user.block"
    case .userUnblock: "user.unblock"
    case .userBlockedList: "user.blocked.list"
    case .channelCreate: "channel.create"
    case .channelGet: "channel.get"
    case .channelList: "channel.list"
    case .channelInvite: "channel.invite"
    case .channelJoin: "channel.join"
    case .channelLeave: "channel.leave"
    case .channelUpdate: "channel.update"
    case .messageSend: "message.send"
    case .messageHistory: "message.history"
    case .messageUpdate: "message.update"
    case .messageDelete: "message.delete"
    case .reactionAdd: "reaction.add"
    case .reactionRemove: "reaction.remove"
    case .messageChanges: "message.changes"
    case .typingStart: "typing.start"
    case .typingStop: "typing.stop"
    case .channelMarkRead: "channel.markRead"
    case .presenceSubscribe: "presence.subscribe"
    case .presenceUnsubscribe: "presence.unsubscribe"
    case .channelSetRole: "channel.setRole"
    case .channelBan: "channel.ban"
    case .channelUnban: "channel.unban"
    case .channelMute(_, let mute): mute == nil ? "channel.unmute" : "channel.mute"
    case .userMute: "user.mute"
    case .userUnmute: "user.unmute"
    case .messageFlag: "message.flag"
    }
}

private func checkCommand(_ command: Command, fields: JSONObject) {
    switch command {
    case .userList(let ids, let key, let values, let limit, _):
        check((ids?.count ?? 0) <= 250 && (key == nil) == (values == nil) && (1...100).contains(limit), "user.list \(command)")
    case .userBlock(let ids), .userUnblock(let ids):
        check((1...100).contains(ids.count), "block list of \(ids.count)")
    case .userBlockedList(_, let limit, _, _, _), .channelList(let limit, _):
        check((1...100).contains(limit), "limit \(limit)")
    case .channelMarkRead(_, let seq):
        check(seq >= 0, "negative seq \(seq)")
    case .presenceSubscribe(let ids), .presenceUnsubscribe(let ids):
        check((1...100).contains(ids.count), "presence list of \(ids.count)")
    case .channelInvite(_, let ids):
        check((1...100).contains(ids.count), "invite of \(ids.count)")
    case .messageHistory(_, let before, let after, let limit, _, let parentSeq):
        check(before == nil || after == nil, "beforeSeq and afterSeq")
        check((1...100).contains(limit), "limit \(limit)")
        check((parentSeq ?? 1) >= 1, "parentSeq \(String(describing: parentSeq))")
    case .messageUpdate(_, let seq, let edit):
        check(seq >= 1, "seq \(seq)")
        check(edit != MessageEdit(), "an edit that changes nothing")
        check(edit.text.map { !$0.isEmpty && !$0.utf8.contains(0) } ?? true, "edit text \(String(describing: edit.text))")
        check((edit.mentionedUserIDs?.count ?? 0) <= 25, "mentions \(edit.mentionedUserIDs?.count ?? 0)")
    case .messageDelete(_, let seq):
        check(seq >= 1, "seq \(seq)")
    case .reactionAdd(_, let seq, let kind), .reactionRemove(_, let seq, let kind):
        check(seq >= 1, "seq \(seq)")
        // §15: 1 to 64 bytes, no control characters (U+0000 included).
        check((1...64).contains(kind.utf8.count), "kind of \(kind.utf8.count) bytes")
        check(!kind.unicodeScalars.contains { $0.properties.generalCategory == .control }, "control character in kind")
    case .channelUpdate(_, _, _, _, let slowMode):
        check((slowMode ?? 0) >= 0 && (slowMode ?? 0) <= ChatEngine.maxSlowModeSeconds, "slowModeSeconds \(String(describing: slowMode))")
    case .channelSetRole(_, _, let role):
        check(role != .owner, "a client names an owner")
    case .channelBan(_, _, let ban):
        check(ban.untilMs.map { (0...JSONFields.latestTime).contains($0) } ?? true, "untilMs \(String(describing: ban.untilMs))")
    case .channelMute(_, let mute):
        check(mute?.untilMs.map { (0...JSONFields.latestTime).contains($0) } ?? true, "untilMs \(String(describing: mute?.untilMs))")
    case .userMute(let ids), .userUnmute(let ids):
        check((1...100).contains(ids.count), "mute list of \(ids.count)")
    case .messageFlag(_, let seq, let reason):
        check(seq >= 1, "seq \(seq)")
        check(reason.count <= Flag.maxReasonLength && !reason.utf8.contains(0), "reason of \(reason.count)")
    case .messageChanges(_, let afterVersion, let limit):
        check(afterVersion >= 0, "afterVersion \(afterVersion)")
        check((1...100).contains(limit), "limit \(limit)")
    case .messageSend(_, let text, let dataJSON, let clientMessageID, let parentSeq, let mentions):
        check(!text.isEmpty, "empty text")
        check((parentSeq ?? 1) >= 1, "parentSeq \(String(describing: parentSeq))")
        check(mentions.count <= 25, "mentions \(mentions.count)")
        // No string that would be stored holds U+0000 (JSONFields.storable).
        check(!text.utf8.contains(0) && !(clientMessageID?.utf8.contains(0) ?? false), "U+0000 in a stored string")
        check(!mentions.contains { $0.utf8.contains(0) }, "U+0000 in a mention")
        switch (fields["data"], dataJSON) {
        case (nil, nil), (.null?, nil): break
        case (.object(let data)?, let json?):
            check(parse(Array(json.utf8)) == .success(.object(data)), "dataJSON \(json) does not parse back to data")
        default:
            check(false, "data \(String(describing: fields["data"])) became \(String(describing: dataJSON))")
        }
    default:
        break
    }
}

/// The reply a client gets parses and carries its id back.
private func checkReply(_ reply: [UInt8], id: JSONValue) -> JSONObject {
    guard case .success(.object(let object)) = parse(reply) else { fatalError("reply is not a JSON object") }
    check(object["id"] == id, "reply id \(String(describing: object["id"])), request id \(id)")
    return object
}

private func checkDecoder(_ input: UnsafeRawBufferPointer, parsed: JSONValue?) {
    let result = RequestDecoder.decode(input)
    guard case .object(let object)? = parsed else {
        guard case .failure(let failure) = result else { fatalError("decoded a request from a non-object") }
        check(failure.id == .null && failure.error.code == .badRequest, "non-object gives \(failure)")
        _ = checkReply(WireEncoding.error(id: failure.id, failure.error), id: .null)
        return
    }
    var id = object["id"] ?? .null
    switch id {
    case .number, .string, .null: break
    default: id = .null
    }
    // Only the document counts, not how it was spelt.
    check(RequestDecoder.decode(written(.object(object))) == result, "the re-written request decodes differently")
    switch result {
    case .failure(let failure):
        check(failure.id == id, "failure id \(failure.id), request id \(id)")
        let reply = checkReply(WireEncoding.error(id: failure.id, failure.error), id: id)
        let error = reply["error"]?.objectValue
        check(error?["code"] == .string(failure.error.code.rawValue) && error?["message"] == .string(failure.error.message),
              "error reply does not carry the error")
    case .success(let request):
        check(request.id == id, "request id \(request.id), document id \(id)")
        check(object["type"] == .string(typeName(request.command)), "type \(String(describing: object["type"])) decoded as \(request.command)")
        let fields: JSONObject
        if case .object(let params)? = object["params"] { fields = params } else { fields = object }
        checkCommand(request.command, fields: fields)
        let ok = checkReply(WireEncoding.ok(id: request.id) { $0.null() }, id: id)
        check(ok["type"] == .string("ok"), "ok reply type")
        if case .messageSend(let channel, let text, let dataJSON, let clientID, let parentSeq, let mentions) = request.command {
            let message = Message(id: "m", channelID: channel, seq: 1, senderID: "u", text: text, dataJSON: dataJSON,
                                  clientMessageID: clientID, createdAt: 0, parentSeq: parentSeq, mentionedUserIDs: mentions)
            var writer = JSONWriter()
            WireEncoding.write(message, to: &writer)
            guard case .success(.object(let sent)) = parse(writer.bytes) else { fatalError("written message does not parse") }
            check(sent["text"] == .string(text) && sent["channelId"] == .string(channel), "message text/channel")
            check(sent["data"] == (fields["data"].flatMap { $0 == .null ? nil : $0 } ?? .null), "message data")
            check(sent["parentSeq"] == (parentSeq.map { .number(String($0)) } ?? .null), "message parentSeq")
            check(sent["mentionedUserIds"] == .array(mentions.map { .string($0) }), "message mentions")
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let parsed = checkParser(input)
    checkDecoder(input, parsed: parsed)
    return 0
}
