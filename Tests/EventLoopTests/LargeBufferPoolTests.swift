import COpenSSL
import Testing

/// large_buffers.c: OpenSSL's transient buffer sizes come from reserved slots.
@Suite("OpenSSL large buffer pools")
struct LargeBufferPoolTests {
    private func fill(_ p: UnsafeMutableRawPointer, _ count: Int, seed: UInt8) {
        for i in 0..<count { p.storeBytes(of: UInt8(truncatingIfNeeded: i) &+ seed, toByteOffset: i, as: UInt8.self) }
    }

    private func holds(_ p: UnsafeMutableRawPointer, _ count: Int, seed: UInt8) -> Bool {
        (0..<count).allSatisfy { p.load(fromByteOffset: $0, as: UInt8.self) == UInt8(truncatingIfNeeded: $0) &+ seed }
    }

    @Test("installed in libcrypto: OpenSSL's own allocations of those sizes are pooled")
    func installed() throws {
        #expect(copenssl_large_buffers().enabled != 0)
        let bio = try #require(CRYPTO_malloc(4096, #fileID, #line))
        let record = try #require(CRYPTO_malloc(17_000, #fileID, #line))
        let small = try #require(CRYPTO_malloc(960, #fileID, #line))
        let ssl = try #require(CRYPTO_malloc(7608, #fileID, #line))
        #expect(copenssl_large_buffer_is_pooled(bio) != 0)
        #expect(copenssl_large_buffer_is_pooled(record) != 0)
        // What a connection keeps (its SSL, its cipher contexts) stays in the heap.
        #expect(copenssl_large_buffer_is_pooled(small) == 0)
        #expect(copenssl_large_buffer_is_pooled(ssl) == 0)
        for p in [bio, record, small, ssl] { CRYPTO_free(p, #fileID, #line) }
    }

    @Test("realloc keeps the bytes when it moves between heap, small slots, large slots and back")
    func reallocMoves() throws {
        var p = try #require(copenssl_large_malloc(100, #fileID, #line))
        fill(p, 100, seed: 1)
        #expect(copenssl_large_buffer_is_pooled(p) == 0)
        p = try #require(copenssl_large_realloc(p, 4000, #fileID, #line))
        #expect(copenssl_large_buffer_is_pooled(p) != 0)
        #expect(holds(p, 100, seed: 1))
        fill(p, 4000, seed: 2)
        let same = try #require(copenssl_large_realloc(p, 4096, #fileID, #line))
        #expect(same == p, "growing within its slot does not move")
        p = try #require(copenssl_large_realloc(p, 20_000, #fileID, #line))
        #expect(copenssl_large_buffer_is_pooled(p) != 0)
        #expect(holds(p, 4000, seed: 2))
        fill(p, 20_000, seed: 3)
        p = try #require(copenssl_large_realloc(p, 100_000, #fileID, #line))
        #expect(copenssl_large_buffer_is_pooled(p) == 0)
        #expect(holds(p, 20_000, seed: 3))
        p = try #require(copenssl_large_realloc(p, 3000, #fileID, #line))
        #expect(copenssl_large_buffer_is_pooled(p) != 0)
        #expect(holds(p, 3000, seed: 3))
        #expect(copenssl_large_realloc(p, 0, #fileID, #line) == nil)
    }

    @Test("a double free or a pointer inside a slot is refused and frees nothing: the slot is never handed out twice")
    func doubleFreeDetected() {
        // On a private pool: freeing a shared slot twice here could free one a TLS test owns.
        #expect(copenssl_large_pool_double_free_check() == 0)
    }

    @Test("a freed slot is reused, and slots beyond the resident few go back to the kernel")
    func reuseAndRelease() throws {
        let first = try #require(copenssl_large_malloc(4096, #fileID, #line))
        copenssl_large_free(first, #fileID, #line)
        let again = try #require(copenssl_large_malloc(4096, #fileID, #line))
        copenssl_large_free(again, #fileID, #line)
        let many = try (0..<200).map { _ in try #require(copenssl_large_malloc(20_000, #fileID, #line)) }
        for p in many {
            fill(p, 20_000, seed: 9)
            copenssl_large_free(p, #fileID, #line)
        }
        #expect(copenssl_large_buffers().released_free > 0)
        // A released slot reads as zeros when reused, and takes writes.
        let reused = try (0..<200).map { _ in try #require(copenssl_large_malloc(20_000, #fileID, #line)) }
        for p in reused {
            fill(p, 20_000, seed: 4)
            #expect(holds(p, 20_000, seed: 4))
        }
        for p in reused { copenssl_large_free(p, #fileID, #line) }
    }
}
