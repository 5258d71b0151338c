import ChatCore

/// What the core knows of a live session: a value, so it crosses between the core queue
/// and the session's loop as it is. The `ChatSession` object itself lives on its loop, in
/// that loop's `HubShard`, found again by `id`.
struct SessionRecord: Sendable, Equatable {
    let id: SessionID
    let userID: UserID
    let userNumber: UserNumber
    let device: String?
    let hideBlocked: Bool
    let expiresAt: Milliseconds
    /// The index of the event loop the connection lives on.
    let loopIndex: Int
}
