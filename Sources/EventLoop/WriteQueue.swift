#if canImport(Glibc)
import Glibc
#endif

/// Bytes waiting for the socket, as a queue of chunks written with one
/// `writev` per flush. Chunks are shared arrays, so one framed message queued
/// to many connections is stored once.
struct WriteQueue {
    private var chunks: [[UInt8]] = []
    private var head = 0
    /// Bytes of `chunks[head]` already written.
    private var headOffset = 0
    private(set) var byteCount = 0

    var isEmpty: Bool { byteCount == 0 }

    mutating func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        chunks.append(bytes)
        byteCount += bytes.count
    }

    enum FlushResult {
        case drained
        case wouldBlock
        case failed(Int32)
    }

    /// Writes as much as the socket takes.
    mutating func flush(to fd: Int32) -> FlushResult {
        let maxVectors = 64
        while byteCount > 0 {
            let count = min(chunks.count - head, maxVectors)
            var written = 0
            withUnsafeTemporaryAllocation(of: iovec.self, capacity: count) { vectors in
                // The arrays stay alive in `chunks` for the duration of the call.
                for i in 0..<count {
                    let chunk = chunks[head + i]
                    let skip = i == 0 ? headOffset : 0
                    chunk.withUnsafeBytes { raw in
                        vectors[i] = iovec(
                            iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress!.advanced(by: skip)),
                            iov_len: raw.count - skip)
                    }
                }
                written = writev(fd, vectors.baseAddress, Int32(count))
            }
            if written < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
                if errno == EINTR { continue }
                return .failed(errno)
            }
            consume(written)
        }
        return .drained
    }

    private mutating func consume(_ written: Int) {
        var left = written
        byteCount -= written
        while left > 0 {
            let remainingInHead = chunks[head].count - headOffset
            if left >= remainingInHead {
                left -= remainingInHead
                head += 1
                headOffset = 0
            } else {
                headOffset += left
                left = 0
            }
        }
        if head == chunks.count {
            clearChunks()
            head = 0
        } else if head > 64 && head * 2 > chunks.count {
            chunks.removeFirst(head)
            head = 0
        }
    }

    /// Takes every queued chunk out (for TLS, which encrypts them first).
    mutating func takeAll(_ body: (UnsafeRawBufferPointer) -> Void) {
        for index in head..<chunks.count {
            chunks[index].withUnsafeBytes { raw in
                body(UnsafeRawBufferPointer(rebasing: raw[(index == head ? headOffset : 0)...]))
            }
        }
        clearChunks()
        head = 0
        headOffset = 0
        byteCount = 0
    }

    /// Emptied by a flush, a small chunk list keeps its storage: the next message to the
    /// connection then costs no allocation. A list a burst made large is released.
    private mutating func clearChunks() {
        chunks.removeAll(keepingCapacity: chunks.capacity <= 8)
    }

    mutating func removeAll() {
        chunks = []
        head = 0
        headOffset = 0
        byteCount = 0
    }
}
