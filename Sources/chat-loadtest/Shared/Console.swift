#if canImport(Glibc)
import Glibc
#endif

/// Unbuffered writes to standard error (progress) and standard output (report).
enum Console {
    static func error(_ line: String) {
        write(2, line + "\n")
    }

    static func output(_ text: String) {
        write(1, text)
    }

    private static func write(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if n <= 0 {
                    if n < 0 && errno == EINTR { continue }
                    return
                }
                offset += n
            }
        }
    }
}
