/// What `ChatClient.messages(in:)` hands the app for one channel: each message once as `.new`
/// (in `seq` order), then each later state of it as `.updated`, and live reaction counts as
/// `.reactions`. A client that was away gets what it missed the same way after its reconnect.
public enum MessageFeedItem: Sendable, Equatable {
    /// A message the feed had not handed out: the next visible one in `seq` order (a reply
    /// included: it carries `parentSeq`).
    case new(Message)
    /// A newer state of a message handed out before (or, with `afterVersion`, one the app
    /// already had): edited, deleted (a tombstone), its thread's `replyCount`, or its reactions
    /// as a catch-up found them. Replace the stored message with it.
    case updated(Message)
    /// Reactions of a message handed out before changed live; fold them in with
    /// `Message.applying(_:ownUserID:)`.
    case reactions(ReactionUpdate)

    /// The message's `seq` in its channel.
    public var seq: Int64 {
        switch self {
        case .new(let message), .updated(let message): return message.seq
        case .reactions(let update): return update.seq
        }
    }

    /// The message of `.new` and `.updated`.
    public var message: Message? {
        switch self {
        case .new(let message), .updated(let message): return message
        case .reactions: return nil
        }
    }
}
