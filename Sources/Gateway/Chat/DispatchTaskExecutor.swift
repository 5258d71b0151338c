import Dispatch

/// Runs tasks (and the default actors they call, such as jwt-kit's key
/// collection) on a Dispatch queue instead of Swift's cooperative pool, so a
/// handshake never waits for pool threads that other work may be holding.
final class DispatchTaskExecutor: TaskExecutor, @unchecked Sendable {
    static let shared = DispatchTaskExecutor()

    private let queue = DispatchQueue(label: "chat-gateway.tasks", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
