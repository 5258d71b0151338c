import ChatCore
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// Appends each push event as one JSON line to a file, on its own queue. The lines hold
/// message text, so the file is readable by the gateway's user only (0600, also when it
/// existed with wider permissions).
final class JSONLinesPushSink: PushSink, @unchecked Sendable {
    private let queue = DispatchQueue(label: "chat-gateway.push.file")
    private let fd: Int32
    private let metrics: GatewayMetrics?

    init(path: String, metrics: GatewayMetrics? = nil) throws(PushSinkError) {
        self.metrics = metrics
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw PushSinkError("cannot open push file \(path): errno \(errno)") }
        guard fchmod(fd, 0o600) == 0 else {
            let error = errno
            close(fd)
            throw PushSinkError("cannot restrict push file \(path) to its owner: errno \(error)")
        }
    }

    deinit { close(fd) }

    func emit(records events: [[UInt8]]) {
        guard !events.isEmpty else { return }
        queue.async { [fd, metrics] in
            var lines: [UInt8] = []
            for event in events {
                lines += event
                lines.append(0x0A)
            }
            var offset = 0
            while offset < lines.count {
                let n = lines[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                offset += n
            }
            metrics?.push(sink: "file", outcome: offset == lines.count ? "written" : "failed", count: events.count)
        }
    }

    func flush() {
        queue.sync {}
    }
}

struct PushSinkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
