import Testing
@testable import Gateway

/// The envelope a broadcast copy travels in on a Redis Cluster (`ShardedRedisTransport`):
/// it round-trips any payload and refuses what a forger or a bug could put on a broadcast
/// channel instead of passing it on.
@Suite struct BroadcastEnvelopeTests {
    @Test func roundTripsAPayloadWithNewlinesAndAnyByte() {
        let payload: [UInt8] = Array("{\"v\":1}\n\n".utf8) + [0, 255, 10, 13]
        let envelope = BroadcastEnvelope(topic: "chat:bus", origin: "node-1/k3x9", number: 4_096, payload: payload)
        #expect(BroadcastEnvelope.decode(envelope.encoded()) == envelope)
        let empty = BroadcastEnvelope(topic: "chat:resync", origin: "n/1", number: 0, payload: [])
        #expect(BroadcastEnvelope.decode(empty.encoded()) == empty)
    }

    @Test(arguments: [
        "", "chat:bus", "chat:bus\nnode", "chat:bus\nnode\n12", "chat:bus\nnode\n-1\n{}", "chat:bus\nnode\nx\n{}",
        "chat:bus\nnode\n18446744073709551616\n{}", String(repeating: "t", count: 65) + "\nnode\n1\n{}",
        "chat:bus\n" + String(repeating: "o", count: 257) + "\n1\n{}",
    ])
    func refusesWhatIsNotAnEnvelope(_ text: String) {
        #expect(BroadcastEnvelope.decode(Array(text.utf8)) == nil)
    }
}
