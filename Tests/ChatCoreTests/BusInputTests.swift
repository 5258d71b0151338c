import Testing
@testable import ChatCore

/// A bus event is input like a client's (issue 26): every field checked before any node
/// applies it; a bad one is a decode error, never a trap.
@Suite struct BusInputTests {
    private static let valid = #"{"v":1,"node":"node-1","n":7,"write":{"kind":"block","blocker":"alice","blocked":"bob","isBlocked":true,"at":1700000000000}}"#

    private func decodes(_ text: String) -> Bool {
        (try? BusEvent.decode(Array(text.utf8))) != nil
    }

    @Test func aSoundEventRoundTrips() throws {
        #expect(decodes(Self.valid))
        let message = Message(id: "m_1", channelID: "c_1", seq: 0, senderID: "alice", text: "hi", dataJSON: #"{"a":1}"#,
                              clientMessageID: "cm-1", createdAt: 1_700_000_000_000)
        var stored = message
        stored.seq = 3
        let event = BusEvent(node: "node-1", number: 9, write: .insertMessage(message), result: .message(stored))
        #expect(try BusEvent.decode(event.encoded()) == event)
    }

    @Test(arguments: [
        (#""node":"node-1""#, #""node":"""#),                                  // empty node
        (#""blocker":"alice""#, #""blocker":"al ice""#),                        // not a user id
        (#""blocked":"bob""#, #""blocked":"\#(String(repeating: "b", count: 129))""#),
        (#""at":1700000000000"#, #""at":-1"#),                                 // before the epoch
        (#""at":1700000000000"#, #""at":253402300800000"#),                    // after year 9999
        (#""at":1700000000000"#, #""at":1e300"#),                              // not an integer
        (#""at":1700000000000"#, #""at":99999999999999999999"#),               // past Int64
    ])
    func aFieldOutOfBoundsIsRefused(_ field: String, _ replacement: String) {
        #expect(!decodes(Self.valid.replacing(field, with: replacement)))
    }

    @Test func readsAndMessagesAreBounded() {
        let read = #"{"v":1,"node":"n","n":1,"write":{"kind":"read","channelId":"c_1","userId":"alice","seq":SEQ}}"#
        #expect(decodes(read.replacing("SEQ", with: "5")))
        #expect(!decodes(read.replacing("SEQ", with: "9007199254740993")))
        #expect(!decodes(read.replacing("SEQ", with: "-1")))
        let stored = #"{"v":1,"node":"n","n":1,"write":{"kind":"message","message":M},"message":S}"#
        let message = #"{"id":"m_1","channelId":"c_1","seq":SEQ,"senderId":"alice","text":"hi","createdAt":1}"#
        let ok = stored.replacing("M", with: message.replacing("SEQ", with: "0"))
            .replacing("S", with: message.replacing("SEQ", with: "1"))
        #expect(decodes(ok))
        #expect(!decodes(ok.replacing(#""seq":1"#, with: #""seq":0"#)), "a stored message has a seq")
        #expect(!decodes(ok.replacing(#""senderId":"alice""#, with: #""senderId":"""#)))
    }

    /// A reaction kind from another node follows the request's rule (1 to 64 bytes, no
    /// control characters), in the change and in a stored message's counts.
    @Test func reactionKindsFollowTheRequestRule() throws {
        var stored = Message(id: "m_1", channelID: "c_1", seq: 1, senderID: "alice", text: "hi", createdAt: 1_700_000_000_000)
        stored.version = 2
        func event(kind: String) -> BusEvent {
            let change = MessageChange(channelID: "c_1", seq: 1, actor: "bob", at: 1_700_000_000_000, action: .addReaction(kind))
            var changed = stored
            changed.reactions = [kind: 1]
            changed.version = 3
            return BusEvent(node: "node-1", number: 9, write: .changeMessage(change), result: .changed(changed, previousVersion: 2))
        }
        #expect(try BusEvent.decode(event(kind: "🎉").encoded()) == event(kind: "🎉"))
        for bad in ["", "a\u{0}b", "tab\tkind", "bell\u{7}", String(repeating: "k", count: 65)] {
            #expect((try? BusEvent.decode(event(kind: bad).encoded())) == nil, "\(bad.debugDescription)")
        }
    }

    @Test func scoresBecomeTimesOnlyWhenFiniteAndInRange() {
        #expect(BusInputRules.milliseconds(fromScoreText: "1700000000000") == 1_700_000_000_000)
        #expect(BusInputRules.milliseconds(fromScoreText: "1700000000000.5") == 1_700_000_000_000)
        for bad in ["inf", "-inf", "+inf", "nan", "1e300", "-1", "9.3e18", "1e19", "", "x"] {
            #expect(BusInputRules.milliseconds(fromScoreText: bad) == nil, "\(bad)")
        }
        #expect(BusInputRules.milliseconds(fromScore: .infinity) == nil)
        #expect(BusInputRules.milliseconds(fromScore: -.greatestFiniteMagnitude) == nil)
        #expect(BusInputRules.milliseconds(fromDecimal: Array("99999999999999999999".utf8)) == nil)
    }

    @Test func typingRelaysAreChecked() {
        let relay = TypingRelay(node: "n", started: true, channelID: "c_1", userID: "alice")
        #expect(TypingRelay.decode(relay.encoded()) == relay)
        #expect(TypingRelay.decode(TypingRelay(node: "n", started: true, channelID: "", userID: "alice").encoded()) == nil)
        #expect(TypingRelay.decode(TypingRelay(node: "n", started: true, channelID: "c", userID: "a b").encoded()) == nil)
    }
}
