import BacklotCrypto
import BacklotJSON
import BacklotZstd

/// Writes an index's bytes record by record (`docs/format.md` §3), so that a writer can encode
/// its files from its own tables without first making a ``PackIndex/File`` for each (200,000 of
/// them, with their chunk arrays, are over 20 MB). ``PackIndex/encoded`` uses it too: there is
/// one encoder.
///
/// ```swift
/// var encoder = PackIndexEncoder(metadata: json, chunks: chunks, dictionary: nil, fileCount: 1, pathBytes: 5, references: 1)
/// encoder.add(path: "a.txt", mode: 0o644, size: 5, digest: digest, chunks: [0])
/// let bytes = encoder.bytes
/// ```
struct PackIndexEncoder {
    private var w = ByteWriter()
    /// Version 2's layout (with a dictionary) or version 1's.
    private let compact: Bool
    /// The previous path's bytes (version 2 front-codes each path against it).
    private var previous: [UInt8] = []

    /// Starts the index: the magic, the metadata, the dictionary, the chunk table and the file
    /// count; `pathBytes` and `references` (the files' total path length and chunk references)
    /// size the buffer once.
    init(
        metadata: JSONNode, chunks: [PackIndex.Chunk], dictionary: ZstdDictionary?, fileCount: Int, pathBytes: Int,
        references: Int
    ) {
        compact = dictionary != nil
        let meta = Array(metadata.serialized().utf8)
        w.reserve(
            64 + meta.count + (dictionary?.bytes.count ?? 0) + chunks.count * (compact ? 40 : 48)
                + fileCount * (compact ? 12 : 50) + pathBytes + 4 * references)
        w.append(compact ? PackIndex.compactMagic : PackIndex.magic)
        w.u32(UInt32(meta.count))
        w.append(meta)
        if let dictionary {
            w.u32(UInt32(dictionary.bytes.count))
            w.append(dictionary.bytes)
        }
        w.u32(UInt32(chunks.count))
        for c in chunks {
            w.digest(c.id)
            if !compact { w.u64(c.offset) }
            w.u32(c.compressedSize)
            w.u32(c.uncompressedSize)
        }
        w.u32(UInt32(fileCount))
    }

    /// Appends the next file's record (files in the order of their paths' bytes). In version 2,
    /// `digest` must be the chunk's ID for a file of one chunk (it is not stored).
    mutating func add<C: Collection>(
        path: String, mode: UInt32, size: UInt64, digest: SHA256Digest, chunks: C
    ) where C.Element == Int {
        let bytes = Array(path.utf8)
        if compact {
            let shared = PackIndex.sharedPrefix(bytes, previous)
            w.u16(UInt16(shared))
            w.u16(UInt16(bytes.count - shared))
            w.append(bytes[shared...])
            w.u16(UInt16(mode))
            w.u32(UInt32(chunks.count))
            for i in chunks { w.u32(UInt32(i)) }
            if chunks.count >= 2 { w.digest(digest) }
            previous = bytes
        } else {
            w.u16(UInt16(bytes.count))
            w.append(bytes)
            w.u32(mode)
            w.u64(size)
            w.digest(digest)
            w.u32(UInt32(chunks.count))
            for i in chunks { w.u32(UInt32(i)) }
        }
    }

    /// The index so far.
    var bytes: [UInt8] { w.bytes }
}
