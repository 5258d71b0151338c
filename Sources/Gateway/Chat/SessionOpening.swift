import ChatCore
import EventLoop

/// An upgrade waiting for the engine's verdict on its session: what the session record
/// needs besides the seed, and whom to tell.
struct SessionOpening {
    let user: UserID
    let options: ChatService.SessionOptions
    let expiresAt: Milliseconds
    let loop: EventLoop
    let completion: @Sendable (Result<SessionRecord, SessionRefusal>) -> Void
}
