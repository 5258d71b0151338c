import Dispatch
import Storage
import Synchronization

/// Reader connections, each with its own serial queue, handed out round-robin.
/// In WAL mode a reader sees the last committed state and never blocks the
/// writer (nor is blocked by it). Connections are `query_only`.
final class ReaderPool: Sendable {
    private final class Reader: Sendable {
        let queue: DispatchQueue
        let connection: Mutex<SQLiteConnection>

        init(queue: DispatchQueue, connection: sending SQLiteConnection) {
            self.queue = queue
            self.connection = Mutex(connection)
        }
    }

    private let readers: [Reader]
    private let next = Atomic<Int>(0)

    init(path: String, count: Int, label: String) throws(StoreError) {
        var readers: [Reader] = []
        for index in 0..<max(1, count) {
            let connection = try SQLiteConnection(path: path)
            try connection.execute("PRAGMA busy_timeout = 5000; PRAGMA query_only = 1")
            readers.append(Reader(queue: DispatchQueue(label: "\(label).\(index)", qos: .userInitiated),
                                  connection: connection))
        }
        self.readers = readers
    }

    /// Runs `read` on the next reader's queue and passes its result to `completion` there.
    func async<T: Sendable>(_ read: @escaping @Sendable (SQLiteConnection) throws(StoreError) -> T,
                            completion: @escaping @Sendable (Result<T, StoreError>) -> Void) {
        let reader = readers[next.wrappingAdd(1, ordering: .relaxed).oldValue % readers.count]
        reader.queue.async {
            let result = reader.connection.withLock { connection -> Result<T, StoreError> in
                do throws(StoreError) { return .success(try read(connection)) } catch { return .failure(error) }
            }
            completion(result)
        }
    }

    /// Runs `read` on the calling thread with the first reader's connection.
    func sync<T: Sendable>(_ read: (SQLiteConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        try readers[0].connection.withLock { connection throws(StoreError) -> T in try read(connection) }
    }
}
