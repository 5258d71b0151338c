import ChatCore
import Dispatch

/// Profile writes nobody waits for: the user a connect creates or updates from its token,
/// and `lastSeenAt`. A connect does not wait for the store, so these are applied in memory
/// at once; a write that fails is retried with backoff (0.25 s doubling to 10 s), always with
/// the user's current value, until it commits, so a restart never loses a user others saw.
extension ChatService {
    /// Writes `user`'s current profile; on failure keeps retrying (core queue).
    func persistUserInBackground(_ userID: UserID) {
        guard let user = directory.users[userID] else { return }
        persist(.upsertUser(user)) { [self] outcome in
            switch outcome {
            case .success:
                if unsavedUsers.isEmpty { userRetryDelaySeconds = 0 }
            case .failure:
                unsavedUsers.insert(userID)
                scheduleUserRetry()
            }
        }
    }

    private func scheduleUserRetry() {
        guard !userRetryScheduled else { return }
        userRetryScheduled = true
        userRetryDelaySeconds = min(max(userRetryDelaySeconds * 2, 0.25), 10)
        logger.warning("store.user_write_retry", metadata: [
            "users": "\(unsavedUsers.count)", "retryInSeconds": "\(userRetryDelaySeconds)",
        ])
        queue.asyncAfter(deadline: .now() + userRetryDelaySeconds) { [self] in
            inbox.async { [self] in
                userRetryScheduled = false
                let retrying = unsavedUsers
                unsavedUsers = []
                for userID in retrying { persistUserInBackground(userID) }
            }
        }
    }
}
