import Testing
@testable import chat_loadtest

/// `room --lifecycle`: the mix of actions per second and how the tool tells the §15 events apart.
@Suite("Lifecycle mix")
struct LifecycleMixTests {
    @Test("react: a reaction every second; mix: three reactions, an edit and a reply in every five seconds")
    func actions() {
        #expect((0..<5).map { LifecycleMix.react.action(tick: $0) } == Array(repeating: .react, count: 5))
        #expect((0..<10).map { LifecycleMix.mix.action(tick: $0) }
            == [.react, .react, .react, .edit, .reply, .react, .react, .react, .edit, .reply])
    }

    @Test("reaction and message.updated events are told apart from everything else without a parse")
    func scanning() {
        func kind(_ text: String) -> FrameScanner.LifecycleEvent? {
            Array(text.utf8).withUnsafeBytes { FrameScanner.lifecycleEvent($0) }
        }
        #expect(kind(#"{"type":"event","event":"reaction.added","data":{}}"#) == .reaction)
        #expect(kind(#"{"type":"event","event":"reaction.removed","data":{}}"#) == .reaction)
        #expect(kind(#"{"type":"event","event":"message.updated","data":{}}"#) == .updated)
        #expect(kind(#"{"type":"event","event":"message.new","data":{}}"#) == nil)
        #expect(kind(#"{"id":"c","type":"ok","result":{}}"#) == nil)
        #expect(kind("") == nil)
        let request = String(decoding: ChatterRequest.reaction(channelID: "c\"1", seq: 7, add: false), as: UTF8.self)
        #expect(request == #"{"id":"c","type":"reaction.remove","channelId":"c\"1","seq":7,"kind":"+1"}"#)
    }
}
