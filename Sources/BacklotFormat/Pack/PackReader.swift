import BacklotBasics
import BacklotCrypto
import BacklotZstd

/// An open pack whose header and index have been read and checked.
///
/// Opening checks the header, the index's SHA-256 and every structural rule of the index, so
/// offsets, sizes and paths from ``index`` are safe to use. Chunk contents are checked as they
/// are read (``readChunk(_:using:)``), and ``verify(jobs:progress:)`` checks everything.
///
/// ```swift
/// let pack = try PackReader(path: "Tutorial.pack")
/// print(pack.index.metadata.assetPackID, pack.header.indexDigest)
/// try pack.verify()
/// ```
public final class PackReader: Sendable {
    public let path: String
    public let header: PackHeader
    public let index: PackIndex
    /// The pack file's size.
    public let fileSize: UInt64
    private let descriptor: FileDescriptor

    /// Opens and checks a pack.
    /// - Throws: ``BacklotError/Code/invalidInput`` (not a pack, other version),
    ///   ``BacklotError/Code/corruptArchive`` (truncated, altered or crafted), ``BacklotError/Code/io``.
    public init(path: String) throws {
        self.path = path
        let fd = try FileDescriptor.openForReading(path)
        do {
            let size = try fd.size()
            (header, index) = try Self.checkedIndex(
                size: size, source: path, hint: "the pack is damaged: package or download it again"
            ) { try fd.read(count: $0, at: $1) }
            fileSize = size
            descriptor = fd
        } catch {
            fd.close()
            throw error
        }
    }

    deinit { descriptor.close() }

    /// The pack's identity: the SHA-256 of its index.
    public var packDigest: SHA256Digest { header.indexDigest }

    /// Reads, decompresses and checks one chunk.
    /// - Throws: ``BacklotError/Code/corruptArchive`` naming the chunk and its offset.
    public func readChunk(_ chunkIndex: Int, using decompressor: ZstdDecompressor) throws -> [UInt8] {
        let chunk = index.chunks[chunkIndex]
        let compressed = try descriptor.read(count: Int(chunk.compressedSize), at: chunk.offset)
        return try Self.decode(
            compressed, chunk: chunk, chunkIndex: chunkIndex, dictionary: index.dictionary, using: decompressor,
            source: path)
    }

    /// The index's bytes as the pack holds them (the ones its digest covers), read again and checked.
    /// - Throws: ``BacklotError/Code/corruptArchive`` when they changed since the pack was opened.
    public func indexBytes() throws -> [UInt8] {
        let bytes = try descriptor.read(count: Int(header.indexLength), at: header.indexOffset)
        guard SHA256.hash(bytes) == header.indexDigest else {
            throw BacklotError(.corruptArchive, "the index changed since the pack was opened", context: path)
        }
        return bytes
    }

    /// Reads the frames of the chunks that lie in `range` of the pack with one read, for
    /// ``decode(_:chunk:chunkIndex:dictionary:using:source:)`` of each (a run of small chunks costs one
    /// system call, not one each). `range` must lie before the index.
    func readFrames(_ range: Range<UInt64>) throws -> [UInt8] {
        precondition(range.upperBound <= header.indexOffset, "frames lie before the index")
        return try descriptor.read(count: Int(range.upperBound - range.lowerBound), at: range.lowerBound)
    }

    /// Decompresses and checks the frame of `chunk` (shared by readers of local and downloaded
    /// packs), with the pack's dictionary (``PackIndex/dictionary``).
    public static func decode(
        _ compressed: [UInt8], chunk: PackIndex.Chunk, chunkIndex: Int, dictionary: ZstdDictionary?,
        using decompressor: ZstdDecompressor, source: String
    ) throws -> [UInt8] {
        try compressed.withUnsafeBytes {
            try decode(
                $0, chunk: chunk, chunkIndex: chunkIndex, dictionary: dictionary, using: decompressor, source: source)
        }
    }

    /// ``decode(_:chunk:chunkIndex:dictionary:using:source:)`` of a frame that is part of a larger buffer.
    public static func decode(
        _ compressed: UnsafeRawBufferPointer, chunk: PackIndex.Chunk, chunkIndex: Int, dictionary: ZstdDictionary?,
        using decompressor: ZstdDecompressor, source: String
    ) throws -> [UInt8] {
        var plain = [UInt8](repeating: 0, count: Int(chunk.uncompressedSize))
        _ = try plain.withUnsafeMutableBytes {
            try decode(
                compressed, chunk: chunk, chunkIndex: chunkIndex, dictionary: dictionary, using: decompressor,
                source: source, into: $0)
        }
        return plain
    }

    /// ``decode(_:chunk:chunkIndex:dictionary:using:source:)`` into `output`, which must hold at
    /// least the chunk's uncompressed size: what a loop that decodes many chunks calls with one
    /// buffer, rather than allocating (and zeroing) a block for each. Returns the checked bytes, the
    /// start of `output`.
    ///
    /// ```swift
    /// let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4 << 20, alignment: 16)
    /// defer { buffer.deallocate() }
    /// let plain = try PackReader.decode(frame, chunk: chunk, chunkIndex: c, dictionary: nil,
    ///                                   using: decompressor, source: url, into: buffer)
    /// ```
    /// - Throws: ``BacklotError/Code/corruptArchive`` when the frame does not decode to exactly the
    ///   chunk's size, or its SHA-256 is not the chunk's ID.
    public static func decode(
        _ compressed: UnsafeRawBufferPointer, chunk: PackIndex.Chunk, chunkIndex: Int, dictionary: ZstdDictionary?,
        using decompressor: ZstdDecompressor, source: String, into output: UnsafeMutableRawBufferPointer
    ) throws -> UnsafeRawBufferPointer {
        // Written only for an error: a download decodes tens of thousands of chunks.
        func location() -> String { "\(source): chunk \(chunkIndex) at offset \(chunk.offset)" }
        let size = Int(chunk.uncompressedSize)
        precondition(output.count >= size, "the buffer is smaller than the chunk")
        let target = UnsafeMutableRawBufferPointer(rebasing: output[0..<size])
        do {
            let produced = try decompressor.decompress(compressed, into: target, dictionary: dictionary)
            guard produced == size else {
                throw BacklotError(
                    .corruptArchive, "the zstd frame expands to \(produced) bytes, not the \(size) declared")
            }
        } catch let e as BacklotError {
            throw BacklotError(
                .corruptArchive, e.message, context: location(),
                hint: "the pack is damaged: package or download it again"
            )
        }
        let plain = UnsafeRawBufferPointer(target)
        let id = SHA256.hash(plain)
        guard id == chunk.id else {
            throw BacklotError(
                .corruptArchive, "the chunk's SHA-256 is \(id.short)…, but the index says \(chunk.id.short)…",
                context: location(), hint: "the pack is damaged: package or download it again")
        }
        return plain
    }

    /// Checks every chunk and every file's SHA-256, and for a pack with variants that every device
    /// gets a sound tree (docs/format.md §3.2), as clients and the server do.
    /// - Parameter progress: called with (bytes checked, total bytes).
    /// - Throws: ``BacklotError/Code/corruptArchive`` naming the file, chunk and offset of the first problem.
    public func verify(jobs: Int = 2, progress: (@Sendable (UInt64, UInt64) -> Void)? = nil) throws {
        if index.metadata.variants != nil { _ = try index.installs(source: path) }
        let files = index.files
        let total = index.installSize
        let next = AtomicCounter()
        let done = AtomicCounter()
        let failures = FirstFailure()
        DispatchQueueRunner.run(jobs: jobs) {
            let decompressor = ZstdDecompressor()
            while !failures.hasFailure {
                let i = next.increment()
                guard i < files.count else { return }
                let file = files[i]
                var hasher = SHA256()
                // A file of one chunk has that chunk's SHA-256 (checked as it is read): no second pass.
                let single = file.chunks.count == 1
                do {
                    for ref in file.chunks {
                        do {
                            let plain = try self.readChunk(ref, using: decompressor)
                            if !single { hasher.update(plain) }
                            let sum = done.add(plain.count)
                            progress?(UInt64(sum), total)
                        } catch let e as BacklotError {
                            throw BacklotError(
                                e.code, e.message, context: "file \"\(file.path)\": \(e.context ?? self.path)",
                                hint: e.hint)
                        }
                    }
                    try file.check(single ? self.index.chunks[file.chunks[0]].id : hasher.finalize(), source: self.path)
                } catch {
                    failures.record(i, error)
                }
            }
        }
        if let error = failures.first { throw error }
    }
}
