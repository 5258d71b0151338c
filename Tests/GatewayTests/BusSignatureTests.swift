import Testing
@testable import Gateway

/// `cluster.busSecret`: a payload carries an HMAC-SHA256 over its channel and itself; a
/// missing, wrong or other channel's MAC is refused. Presence changes parse only when
/// every part is in range.
@Suite struct BusSignatureTests {
    let signature = BusSignature(secret: "a-bus-secret-of-at-least-32-bytes!!")

    @Test func signedPayloadsVerifyOnTheirChannelOnly() {
        let payload = Array(#"{"v":1}"#.utf8)
        let signed = signature.signed(payload, channel: "chat:bus")
        #expect(signed.count == 64 + 1 + payload.count)
        #expect(signature.verified(signed, channel: "chat:bus") == payload)
        #expect(signature.verified(signed, channel: "chat:typing") == nil)
        #expect(BusSignature(secret: "another-secret-of-at-least-32-bytes").verified(signed, channel: "chat:bus") == nil)
        var tampered = signed
        tampered[tampered.count - 1] ^= 1
        #expect(signature.verified(tampered, channel: "chat:bus") == nil)
        #expect(signature.verified(payload, channel: "chat:bus") == nil)
        #expect(signature.verified([], channel: "chat:bus") == nil)
    }

    /// What any HMAC-SHA256 gives for key "Jefe" over "what do ya want for\n nya?" (Python's
    /// `hmac.new(b"Jefe", …, hashlib.sha256)`): the channel, a newline, the payload.
    @Test func theMACIsHMACSHA256() {
        let mac = BusSignature(secret: "Jefe").mac(Array(" nya?".utf8), channel: "what do ya want for")
        #expect(String(decoding: mac, as: UTF8.self) == "311d6a7b527c8d7db9743d7143a09d1e9ed6908915ff979ad118b12fddfa20f8")
    }

    @Test func presenceChangesAreChecked() {
        let change = ClusterPresence.parse(Array("1 1700000000000 alice".utf8))
        #expect(change?.user == "alice" && change?.online == true && change?.at == 1_700_000_000_000)
        for bad in ["1 inf alice", "1 -5 alice", "0 99999999999999999999 alice", "1 1700000000000 al ice",
                    "2 1700000000000 alice", "11 1700000000000 alice", "1 1700000000000 ", "1 1700000000000"] {
            #expect(ClusterPresence.parse(Array(bad.utf8)) == nil, "\(bad)")
        }
    }
}
