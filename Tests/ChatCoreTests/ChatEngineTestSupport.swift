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
        compactMap { if case .setBlock(let a, let b, let on) = $0 { return (a.id, b.id, on) } else { return nil } }
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

extension EngineReply {
    /// The result object of a `.result` reply, parsed.
    var json: JSONValue? {
        if case .result(let bytes) = self { return parseJSON(bytes) }
        return nil
    }

    /// The members of a channel result, as the requester is shown them.
    var members: [String]? {
        json?["members"]?.arrayValue?.compactMap(\.stringValue)
    }

    var errorCode: ErrorCode? {
        if case .failure(let error) = self { return error.code }
        return nil
    }
}

extension ChatEngine {
    /// Settles every write in `effects` with `outcome`, in order, and returns what followed.
    mutating func settle(_ effects: [EngineEffect], _ outcome: WriteOutcome) -> [EngineEffect] {
        effects.persisted.flatMap { committed($0.id, outcome) }
    }
}
