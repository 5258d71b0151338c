import ChatCore
import Dispatch

/// Profile writes nobody waits for (`ChatEngine.touchUser`): a failed one is written again
/// after a backoff (0.25 s doubling to 10 s) until it commits.
extension ChatService {
    func scheduleUserRetry(waiting: Int) {
        guard !userRetryScheduled else { return }
        userRetryScheduled = true
        userRetryDelaySeconds = min(max(userRetryDelaySeconds * 2, 0.25), 10)
        logger.warning("store.user_write_retry", metadata: [
            "users": .stringConvertible(waiting), "retryInSeconds": .stringConvertible(userRetryDelaySeconds),
        ])
        queue.asyncAfter(deadline: .now() + userRetryDelaySeconds) { [self] in
            inbox.async { [self] in
                userRetryScheduled = false
                run(engine.retryUnsavedUsers())
            }
        }
    }
}
