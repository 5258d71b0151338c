#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Writes log lines to a file descriptor, each line (with its newline) in one
/// `write(2)` when the kernel takes it whole. The lock keeps lines from
/// concurrent threads from interleaving even when a write is partial (pipes
/// only guarantee atomicity up to PIPE_BUF bytes).
public final class FileDescriptorLogSink: Sendable {
    public static let standardOutput = FileDescriptorLogSink(fileDescriptor: 1)

    private let fileDescriptor: Int32
    private let lock = Mutex(())

    /// The caller keeps ownership of `fileDescriptor`; it is never closed here.
    public init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    public func write(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        lock.withLock { _ in
            bytes.withUnsafeBytes { buffer in
                guard let base = buffer.baseAddress else { return }
                var offset = 0
                while offset < buffer.count {
                    let written = systemWrite(fileDescriptor, base + offset, buffer.count - offset)
                    if written > 0 {
                        offset += written
                    } else if written < 0 && errno == EINTR {
                        continue
                    } else {
                        return  // Nowhere left to report a failing log write.
                    }
                }
            }
        }
    }
}

/// At file scope, where `write` is the C function and not the method above.
private func systemWrite(_ fileDescriptor: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fileDescriptor, pointer, count)
}
