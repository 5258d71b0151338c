import Testing
@testable import Gateway

struct StreamReadBatcherTests {
    @Test func twoReadsRunAtOnceAndWhatComesMeanwhileGoesInOneRead() {
        let reads = StreamReadBatcher()
        #expect(reads.add(["a"]) == ["a"])
        #expect(reads.add(["b"]) == ["b"])
        // Both running: these wait, each once however often asked.
        #expect(reads.add(["c", "d"]) == nil)
        #expect(reads.add(["d", "e"]) == nil)
        #expect(reads.finished() == ["c", "d", "e"])
        #expect(reads.finished() == nil, "nothing waits")
        #expect(reads.finished() == nil)
        #expect(reads.add(["f"]) == ["f"], "a read may start again")
    }

    @Test func aReadTakesAtMostItsShareAndTheRestFollows() {
        let reads = StreamReadBatcher()
        _ = reads.add(["x"])
        _ = reads.add(["y"])
        let many = (0..<(StreamReadBatcher.maxChannelsPerRead + 10)).map { "c\($0)" }
        #expect(reads.add(many) == nil)
        #expect(reads.finished() == Array(many.prefix(StreamReadBatcher.maxChannelsPerRead)))
        #expect(reads.finished() == Array(many.suffix(10)))
    }
}
