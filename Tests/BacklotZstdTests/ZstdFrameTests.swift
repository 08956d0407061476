import BacklotBasics
import BacklotTestSupport
import BacklotZstd
import Testing

/// Single zstd frames with bounded output: what every chunk of a pack goes through.
@Suite struct ZstdFrameTests {
    @Test func framesRoundTripAtEveryLevelAndSize() throws {
        var g = SeededGenerator(seed: 41)
        print("ZstdFrameTests seed 41")
        let d = ZstdDecompressor()
        for size in [0, 1, 100, 4096, 1 << 20] {
            let text = g.text(size)
            for level in [1, 3, 19] {
                let frame = try ZstdCompressor(level: Int32(level)).compress(text)
                #expect(frame.count <= ZstdCompressor.bound(forInputSize: text.count))
                #expect(try d.decompress(frame, expectedSize: text.count, dictionary: nil) == text)
            }
        }
    }

    @Test func aFrameLargerThanDeclaredIsRefusedWithoutTheMemory() throws {
        let plain = [UInt8](repeating: 7, count: 1 << 20)
        let frame = try ZstdCompressor().compress(plain)
        #expect(frame.count < 1 << 12, "a run compresses to a few bytes: a bomb")
        let d = ZstdDecompressor()
        #expect(throws: BacklotError.self) { try d.decompress(frame, expectedSize: 1000, dictionary: nil) }
        #expect(throws: BacklotError.self) { try d.decompress(frame, expectedSize: (1 << 20) + 1, dictionary: nil) }
        // After a refusal the context still works.
        #expect(try d.decompress(frame, expectedSize: 1 << 20, dictionary: nil) == plain)
    }

    @Test func whatIsNotExactlyOneFrameIsCorrupt() throws {
        let frame = try ZstdCompressor().compress(Array("hello, frames".utf8))
        let d = ZstdDecompressor()
        for bad in [[], Array(frame.dropLast()), frame + frame, frame + [0], [UInt8](repeating: 0x28, count: 16)] {
            do {
                _ = try d.decompress(bad, expectedSize: 13, dictionary: nil)
                Issue.record("\(bad.count) bytes were accepted as a frame")
            } catch let e as BacklotError {
                #expect(e.code == .corruptArchive)
            }
        }
        #expect(!ZstdDecompressor.libraryVersion.isEmpty)
    }
}
