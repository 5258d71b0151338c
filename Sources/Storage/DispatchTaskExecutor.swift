import Dispatch

/// Runs tasks (and the default actors they call, such as jwt-kit's key
/// collection, and postgres-nio's continuations) on a Dispatch queue instead of
/// Swift's cooperative pool, so a handshake or a database commit never waits for
/// pool threads that other work may be holding. It lives in `Storage`, the one target
/// both the gateway and the PostgreSQL backend import, so that no backend needs the
/// network loop for it.
public final class DispatchTaskExecutor: TaskExecutor, @unchecked Sendable {
    public static let shared = DispatchTaskExecutor()

    private let queue = DispatchQueue(label: "chat-gateway.tasks", attributes: .concurrent)

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
