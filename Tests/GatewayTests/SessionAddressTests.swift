import Testing
@testable import Gateway

/// A session id carries its loop and hub-shard slot, and a serial that tells reused slots apart.
@Suite("Session address")
struct SessionAddressTests {
    @Test("loop, slot and serial survive the round trip through the id, at their limits")
    func roundTrip() {
        for (serial, loop, slot) in [(UInt32(1), 0, 0), (UInt32.max, 255, (1 << 24) - 1), (77, 3, 19_999)] {
            let address = SessionAddress(serial: serial, loopIndex: loop, slot: slot)
            #expect(SessionAddress(address.id) == address)
        }
        let old = SessionAddress(serial: 1, loopIndex: 0, slot: 5)
        let reused = SessionAddress(serial: 2, loopIndex: 0, slot: 5)
        #expect(old.id != reused.id, "a reused slot must not answer for the session that held it before")
    }
}
