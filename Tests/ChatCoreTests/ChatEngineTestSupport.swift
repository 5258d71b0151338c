@testable import ChatCore

/// An engine over a directory of the given users, and readers for its effects.
func makeEngine(users: [UserID]) -> ChatEngine {
    var directory = ChatDirectory()
    for user in users { directory.upsert(User(id: user, createdAt: 1)) }
    return ChatEngine(directory: directory)
}

extension [EngineEffect] {
    /// The writes asked for, in order.
    var persisted: [(id: WriteID, write: StoreWrite)] {
        compactMap { if case .persist(let id, let write) = $0 { return (id, write) } else { return nil } }
    }

    /// The replies, in order.
    var replies: [(to: Requester, reply: EngineReply)] {
        compactMap { if case .reply(let to, let reply) = $0 { return (to, reply) } else { return nil } }
    }

    /// The session block-set changes, in order.
    var blockChanges: [(blocker: UserID, blocked: UserID, isBlocked: Bool)] {
        compactMap { if case .setBlock(let a, let b, let on) = $0 { return (a, b, on) } else { return nil } }
    }

    /// The events published to users, as (users, JSON text, excluded session).
    var published: [(users: [UserID], text: String, excluding: SessionID?)] {
        compactMap {
            if case .publishToUsers(let users, let payload, let excluding) = $0 {
                return (users, String(decoding: payload, as: UTF8.self), excluding)
            }
            return nil
        }
    }
}
