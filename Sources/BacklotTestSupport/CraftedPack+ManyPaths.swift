import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotZstd
import Foundation

extension CraftedPack {
    /// A version-2 pack of `count` empty files whose paths share a `prefixLength`-byte prefix:
    /// the memory amplifier of front coding. Each record is 11 bytes and some suffix bytes, but
    /// the paths it declares hold about `count × prefixLength` bytes (a million 4 KiB paths are
    /// 4 GB in an 11 MB pack). The records are written one at a time, so making the pack costs
    /// its own size, not what it declares; every rule but the decoded size holds (sorted,
    /// canonical shared lengths, normal paths).
    ///
    /// ```swift
    /// let pack = try CraftedPack.manyPaths(count: 1_000_000, prefixLength: 4_000)
    /// ```
    /// - Parameters:
    ///   - prefixLength: the shared prefix's length, made of 200-byte folder names (at most 4,080).
    ///   - seed: the training text of the dictionary, which the pack must have to be of version 2.
    public static func manyPaths(count: Int, prefixLength: Int, seed: UInt64 = 71) throws -> [UInt8] {
        precondition(prefixLength >= 1 && prefixLength <= 4_080 && count >= 1 && count <= 100_000_000)
        var g = SeededGenerator(seed: seed)
        guard let dictionary = ZstdDictionary.train(samples: (0..<400).map { _ in g.text(1_000) }, capacity: 8 << 10)
        else { throw BacklotError(.io, "zstd trained no dictionary for the crafted pack") }
        // The index of no file, whose last four bytes (the file count) are then replaced.
        var index = try CraftedPack(files: [], dictionary: dictionary).index.encoded
        index.removeLast(4)
        withUnsafeBytes(of: UInt32(count).littleEndian) { index += $0 }
        // The prefix: folders of 199 letters and a slash, then letters up to the length.
        var prefix: [UInt8] = []
        while prefix.count < prefixLength {
            prefix += prefix.count + 200 <= prefixLength ? [UInt8](repeating: 0x64, count: 199) + [0x2F] : [0x64]
        }
        index.reserveCapacity(index.count + count * 20 + prefix.count)
        var previous: [UInt8] = []
        for i in 0..<count {
            // Fixed-width decimal numbers sort as their bytes do.
            let name = Array(String(format: "%010d", i).utf8)
            let shared = i == 0 ? 0 : prefix.count + zip(name, previous).prefix { $0 == $1 }.count
            let suffix = i == 0 ? prefix + name : Array(name[(shared - prefix.count)...])
            withUnsafeBytes(of: UInt16(shared).littleEndian) { index += $0 }
            withUnsafeBytes(of: UInt16(suffix.count).littleEndian) { index += $0 }
            index += suffix
            withUnsafeBytes(of: UInt16(0o644).littleEndian) { index += $0 }
            withUnsafeBytes(of: UInt32(0).littleEndian) { index += $0 }
            previous = name
        }
        let header = PackHeader(
            formatVersion: 2, indexOffset: UInt64(PackHeader.size), indexLength: UInt64(index.count),
            indexDigest: SHA256.hash(index))
        return header.encoded + index
    }
}
