import BacklotBasics
import BacklotCrypto
import BacklotTestSupport
import Testing

@testable import BacklotFormat

/// The writer's table of stored chunks (#18: 2 MB instead of 21 for 200,000 chunks) finds every
/// chunk it holds, by number, through every growth, and nothing it does not hold.
@Suite struct StoredChunksTests {
    @Test func everyStoredChunkIsFoundAndNoOther() {
        var g = SeededGenerator(seed: 51)
        print("StoredChunksTests seed 51")
        var stored = StoredChunks(expected: 3)
        let ids = (0..<5_000).map { _ in SHA256.hash(g.bytes(16)) }
        var misplaced = 0
        for (i, id) in ids.enumerated() {
            if stored.index(of: id) != nil { misplaced += 1 }
            let number = stored.append(
                PackIndex.Chunk(id: id, offset: UInt64(64 + i), compressedSize: 1, uncompressedSize: 1))
            if number != i { misplaced += 1 }
        }
        for (i, id) in ids.enumerated() where stored.index(of: id) != i { misplaced += 1 }
        #expect(misplaced == 0)
        #expect(stored.index(of: SHA256.hash([1, 2, 3])) == nil)
        #expect(stored.chunks.count == 5_000)
        let table = stored.take()
        let inOrder = table.map(\.id) == ids
        #expect(inOrder, "the chunk table is not in the order chunks were stored")
        #expect(stored.chunks.isEmpty)
    }
}
