import BacklotBasics
import BacklotCrypto
import BacklotTestSupport
import BacklotZstd
import Testing

/// Frames compressed against a reference prefix: what a chunk delta is (docs/format.md §14).
@Suite struct ZstdPrefixTests {
    /// An old chunk and a new one made of it with a few small edits.
    static func pair(seed: UInt64, size: Int = 64 << 10) -> (old: [UInt8], new: [UInt8]) {
        var g = SeededGenerator(seed: seed)
        print("ZstdPrefixTests seed \(seed)")
        let old = g.bytes(size)
        var new = old
        new.replaceSubrange(1000..<1040, with: g.bytes(40))
        new.insert(contentsOf: g.bytes(120), at: size / 2)
        new.removeSubrange(size - 3000..<size - 2900)
        return (old, new)
    }

    @Test func aDeltaRoundTripsAndIsSmallerThanTheFrame() throws {
        let (old, new) = Self.pair(seed: 1501)
        let c = ZstdCompressor(level: 3)
        let delta = try c.compress(new, prefix: old)
        let whole = try c.compress(new)
        #expect(delta.count * 20 < whole.count, "a few edits cost a few hundred bytes, not the chunk")
        let d = ZstdDecompressor()
        #expect(try d.decompress(delta, prefix: old, expectedSize: new.count) == new)
        // The prefix is for one frame only: the same contexts then work as before.
        #expect(try d.decompress(whole, expectedSize: new.count, dictionary: nil) == new)
        #expect(try ZstdDecompressor().decompress(try c.compress(new), expectedSize: new.count, dictionary: nil) == new)
    }

    @Test func aWrongBaseGivesOtherBytesOrAnErrorNeverTheTarget() throws {
        let (old, new) = Self.pair(seed: 1502)
        let delta = try ZstdCompressor().compress(new, prefix: old)
        var wrong = old
        wrong[5000] ^= 0xFF
        wrong[30000] ^= 0x55
        let d = ZstdDecompressor()
        // Without a checksum zstd cannot tell: the caller's SHA-256 of the result must.
        if let out = try? d.decompress(delta, prefix: wrong, expectedSize: new.count) {
            #expect(SHA256.hash(out) != SHA256.hash(new))
        }
        #expect((try? d.decompress(delta, prefix: [UInt8](repeating: 0, count: 10), expectedSize: new.count)) != new)
        #expect(try d.decompress(delta, prefix: old, expectedSize: new.count) == new)
    }

    @Test func theOutputIsBoundedByTheDeclaredSize() throws {
        let old = [UInt8](repeating: 9, count: 4096)
        let bomb = [UInt8](repeating: 9, count: 1 << 22)
        let delta = try ZstdCompressor().compress(bomb, prefix: old)
        #expect(delta.count < 1 << 12)
        let d = ZstdDecompressor()
        for declared in [1000, 4096, (1 << 22) - 1] {
            #expect(throws: BacklotError.self) { try d.decompress(delta, prefix: old, expectedSize: declared) }
        }
        #expect(try d.decompress(delta, prefix: old, expectedSize: 1 << 22) == bomb)
    }
}
