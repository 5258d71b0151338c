import Dispatch

/// Runs tasks (and the default actors they call, such as jwt-kit's key
/// collection, and postgres-nio's continuations) on a Dispatch queue instead of
/// Swift's cooperative pool, so a handshake or a database commit never waits for
/// pool threads that other work may be holding.
public final class DispatchTaskExecutor: TaskExecutor, @unchecked Sendable {
    public static let shared = DispatchTaskExecutor()

    private let queue = DispatchQueue(label: "chat-gateway.tasks", attributes: .concurrent)

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
