import Foundation

/// Moves a value across a thread hop the compiler cannot check.
public struct UnsafeTransfer<T>: @unchecked Sendable {
    public var value: T

    public init(value: T) {
        self.value = value
    }
}

/// Runs blocking work (socket reads, child processes, semaphore waits) on a thread of its
/// own and awaits it, so the test does not hold a cooperative-pool thread meanwhile. The
/// whole test run shares that pool (two threads on a two-core machine) with the in-process
/// gateways' tasks (token signing, the chat service): a test that blocks it for seconds
/// stalls every other test, and timing checks elsewhere measure the stall.
public func offThePool<T>(_ body: @escaping () throws -> T) async throws -> T {
    let work = UnsafeTransfer(value: body)
    let result: UnsafeTransfer<Result<T, any Error>> = await withCheckedContinuation { continuation in
        let thread = Thread {
            continuation.resume(returning: UnsafeTransfer(value: Result { try work.value() }))
        }
        thread.start()
    }
    return try result.value.get()
}
