import ChatCore
import Storage

/// The driver half of the engine: carries `EngineEffect`s out, in order, on the core queue.
extension ChatService {
    func run(_ effects: [EngineEffect]) {
        for effect in effects {
            switch effect {
            case .persist(let write, let change):
                store.enqueue(change) { [self] result in
                    if case .failure(let error) = result {
                        logger.error("store.error", metadata: ["error": "\(error)"])
                    }
                    let outcome: WriteOutcome
                    switch result {
                    case .success(let stored): outcome = .committed(stored)
                    case .failure: outcome = .failed
                    }
                    inbox.async { [self] in run(engine.committed(write, outcome)) }
                }
            case .reply(let requester, let answer):
                deliver(answer, to: requester)
            case .setBlock(let blocker, let blocked, let isBlocked):
                let numbers = (number(for: blocker), number(for: blocked))
                forEachShard { $0.setBlock(blocker: (blocker, numbers.0), blocked: (blocked, numbers.1), isBlocked: isBlocked) }
            case .addToChannel(let users, let channel):
                forEachShard { $0.add(users: users, to: channel) }
            case .removeFromChannel(let users, let channel):
                forEachShard { $0.remove(users: users, from: channel) }
            case .publishToUsers(let users, let payload, let excluding):
                publish(SharedEvent(payload: payload), toUsers: users, excluding: excluding.flatMap { sessionsByID[$0] })
            case .closeSessions(let user, .deactivated):
                closeSessions(of: user, code: .userDeactivated, reason: "user deactivated")
            case .userWritesFailed(let waiting):
                scheduleUserRetry(waiting: waiting)
            case .log(let event, let metadata):
                logger.info("\(event)", metadata: metadata.mapValues { .string($0) })
            }
        }
    }

    private func deliver(_ answer: EngineReply, to requester: Requester) {
        switch requester {
        case .session(let id, let requestID):
            // A session that closed meanwhile gets nothing.
            guard let session = sessionsByID[id] else { return }
            switch answer {
            case .blockResults(let results):
                reply(session, id: requestID) { w in Self.writeResults(results, to: &w) }
            case .result(let json):
                reply(session, id: requestID) { $0.raw(bytes: json) }
            case .failure(let error):
                reply(session, id: requestID, error: error)
            }
        case .admin(let call):
            adminReplies.removeValue(forKey: call)?(answer)
        }
    }
}
