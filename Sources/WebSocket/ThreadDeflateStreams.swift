import CZlib
#if canImport(Glibc)
import Glibc
#endif

/// One reusable zlib compressor per thread and window size, for messages
/// compressed without context takeover: a `deflateReset` instead of a
/// `deflateInit2`/`deflateEnd` pair per message (the pair costs ~60 µs and 10
/// mallocs), and no compressor memory held by idle connections. A thread runs
/// one compression at a time, so no lock is needed.
final class ThreadDeflateStreams {
    private var streams: [Int32: UnsafeMutablePointer<z_stream>] = [:]

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            Unmanaged<ThreadDeflateStreams>.fromOpaque(pointer).release()
        }
        return key
    }()

    /// This thread's set.
    static var current: ThreadDeflateStreams {
        if let pointer = pthread_getspecific(key) {
            return Unmanaged<ThreadDeflateStreams>.fromOpaque(pointer).takeUnretainedValue()
        }
        let streams = ThreadDeflateStreams()
        pthread_setspecific(key, Unmanaged.passRetained(streams).toOpaque())
        return streams
    }

    deinit {
        for stream in streams.values {
            deflateEnd(stream)
            stream.deinitialize(count: 1)
            stream.deallocate()
        }
    }

    /// A reset compressor for raw deflate with `windowBits`, or nil if zlib failed.
    func stream(windowBits: Int32) -> UnsafeMutablePointer<z_stream>? {
        if let stream = streams[windowBits] { return stream }
        let fresh = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        fresh.initialize(to: z_stream())
        guard czlib_deflate_init2(fresh, Z_DEFAULT_COMPRESSION, -windowBits, 8) == Z_OK else {
            fresh.deallocate()
            return nil
        }
        streams[windowBits] = fresh
        return fresh
    }
}
