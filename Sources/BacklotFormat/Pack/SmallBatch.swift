import BacklotBasics
import BacklotCrypto
import BacklotZstd

/// Small files gathered for ``PackWriter`` to read, hash, cut and compress on its worker threads,
/// one whole file per thread at a time: the per-file work (opening beneath the root, reading,
/// the file's SHA-256, chunking, compressing) runs on every core instead of one. The first files
/// may have been read, cut and hashed ahead (``ReadAhead``), while the dictionary was trained.
///
/// A batch holds consecutive files of the selection (so chunks keep the files' order) up to
/// ``byteLimit`` bytes or ``countLimit`` files, which bounds the memory a batch's results take.
struct SmallBatch {
    /// Files up to this size are packed whole by one thread; larger ones are read by the main
    /// thread and their chunks spread over the threads.
    static let fileLimit = 8 << 20
    static let byteLimit: UInt64 = 32 << 20
    static let countLimit = 4_096

    /// File numbers (in the selection), in order.
    private(set) var files: [Int] = []
    private var bytes: UInt64 = 0

    mutating func add(_ file: Int, size: UInt64) {
        files.append(file)
        bytes += size
    }

    var isFull: Bool { bytes >= Self.byteLimit || files.count >= Self.countLimit }

    /// One file, packed: its SHA-256 and its chunks in order (`compressed` is nil for a chunk
    /// that was already stored when the batch started).
    struct Packed: Sendable {
        struct Piece: Sendable {
            let id: SHA256Digest
            let length: Int
            let compressed: [UInt8]?
        }
        let digest: SHA256Digest
        let pieces: [Piece]
    }

    /// Reads the whole of `file` (opened once, beneath the root and through no link, and checked
    /// to be the regular file of the size selected) into `buffer`, which holds at least its size
    /// + 1 bytes; returns the size.
    /// - Throws: ``BacklotError/Code/invalidSource`` if the file changed since it was selected,
    ///   ``BacklotError/Code/io``.
    static func read(
        _ file: SourceSelection.File, root: DirectoryHandle, into buffer: UnsafeMutableRawBufferPointer
    ) throws -> Int {
        let fd = try file.open(beneath: root)
        defer { fd.close() }
        // One byte more than selected is asked for, so a file that grew is seen, not cut short;
        // a short read of a regular file is its end, so a file costs one read, not two.
        let wanted = Int(file.size) + 1
        var filled = 0
        while filled < wanted {
            let asked = wanted - filled
            let n = try fd.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled..<wanted]))
            filled += n
            if n == 0 || n < asked { break }
        }
        guard filled == Int(file.size) else {
            throw BacklotError(
                .invalidSource,
                "the file changed while it was being packaged (\(file.size) bytes when selected, \(filled)\(filled == wanted ? " or more" : "") read)",
                context: file.sourcePath, hint: "package again once nothing is writing to the source tree")
        }
        return filled
    }

    /// Per-file results written by the worker threads.
    typealias Results = IndexedResults<Packed>

    /// A chunk cut from a file: its ID and length.
    struct Cut: Sendable {
        let id: SHA256Digest
        let length: Int
    }

    /// The chunks of a file's `content` in order, and the file's SHA-256 (a file of one chunk has
    /// that chunk's: no second pass over its bytes).
    static func cut(_ content: UnsafeRawBufferPointer, chunker: Chunker) -> (chunks: [Cut], digest: SHA256Digest) {
        var chunks: [Cut] = []
        var position = 0
        while position < content.count {
            let rest = UnsafeRawBufferPointer(rebasing: content[position...])
            let length = chunker.cutPoint(in: rest)
            chunks.append(Cut(id: SHA256.hash(UnsafeRawBufferPointer(rebasing: rest[0..<length])), length: length))
            position += length
        }
        return (chunks, chunks.count == 1 ? chunks[0].id : SHA256.hash(content))
    }

    /// Reads `file` (opened once, beneath the root and through no link, and checked to be the
    /// regular file of the size selected) into `buffer`, which holds ``fileLimit`` + 1 bytes,
    /// and cuts, hashes and compresses it; a file in `ahead` was read, cut and hashed already
    /// (``ReadAhead``), and is only compressed.
    /// - Throws: ``BacklotError/Code/invalidSource`` if the file changed since it was selected,
    ///   ``BacklotError/Code/io``.
    static func pack(
        _ file: SourceSelection.File, root: DirectoryHandle, buffer: UnsafeMutableRawBufferPointer, chunker: Chunker,
        compressor: ZstdCompressor, alreadyStored: StoredChunks, ahead: ReadAhead.File? = nil
    ) throws -> Packed {
        if let ahead {
            return try ahead.bytes.withUnsafeBytes { content in
                try compress(
                    content, chunks: ahead.chunks, digest: ahead.digest, compressor: compressor,
                    alreadyStored: alreadyStored)
            }
        }
        let filled = try read(file, root: root, into: buffer)
        let content = UnsafeRawBufferPointer(rebasing: buffer[0..<filled])
        let (chunks, digest) = cut(content, chunker: chunker)
        return try compress(
            content, chunks: chunks, digest: digest, compressor: compressor, alreadyStored: alreadyStored)
    }

    /// The file whose `content` was cut into `chunks`, each compressed unless already stored.
    private static func compress(
        _ content: UnsafeRawBufferPointer, chunks: [Cut], digest: SHA256Digest, compressor: ZstdCompressor,
        alreadyStored: StoredChunks
    ) throws -> Packed {
        var pieces: [Packed.Piece] = []
        pieces.reserveCapacity(chunks.count)
        var position = 0
        for chunk in chunks {
            let bytes = UnsafeRawBufferPointer(rebasing: content[position..<position + chunk.length])
            pieces.append(
                Packed.Piece(
                    id: chunk.id, length: chunk.length,
                    compressed: alreadyStored.index(of: chunk.id) == nil ? try compressor.compress(bytes) : nil))
            position += chunk.length
        }
        return Packed(digest: digest, pieces: pieces)
    }
}
