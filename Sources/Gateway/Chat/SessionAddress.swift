import ChatCore

/// A session id that says where its session lives: the event loop and the slot of that
/// loop's hub shard, plus a serial so a reused slot never answers for an older session.
/// Replies and closes reach the session with two array indexings, no lookup by hash.
///
/// Layout: serial (32 bits) · loop index (8 bits) · slot (24 bits).
struct SessionAddress: Equatable {
    var serial: UInt32
    var loopIndex: Int
    var slot: Int

    static let maxLoops = 256
    static let maxSlots = 1 << 24

    init(serial: UInt32, loopIndex: Int, slot: Int) {
        self.serial = serial
        self.loopIndex = loopIndex
        self.slot = slot
    }

    init(_ id: SessionID) {
        serial = UInt32(truncatingIfNeeded: id >> 32)
        loopIndex = Int((id >> 24) & 0xFF)
        slot = Int(id & 0xFF_FFFF)
    }

    var id: SessionID {
        UInt64(serial) << 32 | UInt64(loopIndex & 0xFF) << 24 | UInt64(slot & 0xFF_FFFF)
    }
}
