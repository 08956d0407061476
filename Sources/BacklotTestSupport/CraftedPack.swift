import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotZstd

/// Valid packs that are expensive to process: one 4 MiB chunk of zeros (a few hundred bytes
/// compressed) that a file refers to many times, so that a tiny archive declares gigabytes.
public enum CraftedPack {
    /// The bytes of one chunk.
    public static let chunkSize = 4 << 20

    /// A pack `id` whose one file `big.bin` refers to the zero chunk `references` times.
    /// - Parameter correctDigest: compute the file's real SHA-256 (hashing references × 4 MiB);
    ///   otherwise the file's digest is wrong, which only a processing that gets that far finds.
    public static func repeatedChunk(id: String, references: Int, correctDigest: Bool) throws -> [UInt8] {
        let zeros = [UInt8](repeating: 0, count: chunkSize)
        let frame = try ZstdCompressor(level: 3).compress(zeros)
        let chunk = PackIndex.Chunk(id: SHA256.hash(zeros), offset: UInt64(PackHeader.size), compressedSize: UInt32(frame.count),
                                    uncompressedSize: UInt32(chunkSize))
        var digest = SHA256.hash([1])
        if correctDigest {
            var hasher = SHA256()
            for _ in 0..<references { hasher.update(zeros) }
            digest = hasher.finalize()
        }
        let file = PackIndex.File(path: "big.bin", mode: 0o644, size: UInt64(references) * UInt64(chunkSize), digest: digest,
                                  chunks: [Int](repeating: 0, count: references))
        let metadata = PackMetadata(assetPackID: try PackID(id), downloadPolicy: .onDemand, platforms: [.linux], userInfo: nil, language: nil)
        let index = PackIndex(metadata: metadata, chunking: nil, chunks: [chunk], files: [file]).encoded
        let header = PackHeader(indexOffset: UInt64(PackHeader.size + frame.count), indexLength: UInt64(index.count), indexDigest: SHA256.hash(index))
        return header.encoded + frame + index
    }
}
