import BacklotBasics
import BacklotCrypto
import BacklotZstd

/// Makes the delta file (``PackDelta``, `docs/format.md` §14) that takes a client from one
/// version of a pack to another.
///
/// For each chunk of the target that the base does not hold, the base chunks that covered the same
/// bytes of the same file (the chunks of the base's file at that path overlapping the chunk's
/// range, at most four; for a file that grew, its last chunk) are the reference prefix. The delta
/// is kept when it is smaller than the chunk's own frame by more than its table entry and 2 %
/// (measured in docs/benchmarks.md: a 10 % margin left 4 % of the update scenario's bytes on the table). The target's index is compressed against the base's index the same way.
/// A file whose first four tries give no delta is taken as replaced, and the rest of it is not
/// tried (so a version of new content costs little to process). Output is deterministic for the
/// same packs, level and libzstd.
///
/// ```swift
/// let delta = try DeltaBuilder().build(base: try PackReader(path: "v1.pack"), target: try PackReader(path: "v2.pack"))
/// try delta.bytes.write(to: "v1-v2.delta")
/// ```
public struct DeltaBuilder: Sendable {
    /// zstd level of the deltas.
    public var level: Int32
    /// A delta is kept only when its frame and table entry cost less than this share of the chunk's frame.
    public var keepBelow: Double

    public init(level: Int32 = 3, keepBelow: Double = 0.98) {
        self.level = level
        self.keepBelow = keepBelow
    }

    /// A built delta: its file bytes and what it saves.
    public struct Result: Sendable {
        /// The whole delta file.
        public let bytes: [UInt8]
        public let delta: PackDelta
        /// Chunks of the target that the base lacks (each costs its frame without the delta).
        public let missingChunks: Int
        /// Compressed bytes of those chunks' frames.
        public let missingBytes: UInt64
        /// The frames the delta replaces: their compressed bytes.
        public let replacedBytes: UInt64
    }

    /// A pack as the builder reads it: its index (checked), the index's bytes, and its frames by
    /// range (a local file, or an object in a bucket read by ranges).
    public struct Input {
        public let index: PackIndex
        public let indexBytes: [UInt8]
        public let packDigest: SHA256Digest
        /// Reads `count` bytes of the pack at `offset`.
        public let read: (_ count: Int, _ offset: UInt64) throws -> [UInt8]

        public init(
            index: PackIndex, indexBytes: [UInt8], packDigest: SHA256Digest,
            read: @escaping (_ count: Int, _ offset: UInt64) throws -> [UInt8]
        ) {
            self.index = index
            self.indexBytes = indexBytes
            self.packDigest = packDigest
            self.read = read
        }

        /// A local pack.
        public init(_ reader: PackReader) throws {
            self.init(
                index: reader.index, indexBytes: try reader.indexBytes(), packDigest: reader.packDigest,
                read: { count, offset in try reader.readFrames(offset..<offset + UInt64(count)) })
        }

        func chunk(_ c: Int, using decompressor: ZstdDecompressor) throws -> [UInt8] {
            let chunk = index.chunks[c]
            return try PackReader.decode(
                try read(Int(chunk.compressedSize), chunk.offset), chunk: chunk, chunkIndex: c,
                dictionary: index.dictionary, using: decompressor, source: "pack \(packDigest.short)…")
        }
    }

    /// Builds the delta from `base` to `target` (local packs).
    /// - Throws: what reading either pack throws (``BacklotError/Code/corruptArchive``, ``BacklotError/Code/io``).
    public func build(base: PackReader, target: PackReader) throws -> Result {
        try build(base: try Input(base), target: try Input(target))
    }

    /// Builds the delta from `base` to `target`.
    /// - Throws: what reading either pack throws (``BacklotError/Code/corruptArchive``, ``BacklotError/Code/io``).
    public func build(base: Input, target: Input) throws -> Result {
        let compressor = ZstdCompressor(level: level)
        let decompressor = ZstdDecompressor()
        let held = Set(base.index.chunks.map(\.id))
        var baseFiles: [String: PackIndex.File] = [:]
        for f in base.index.files { baseFiles[f.path] = f }
        var decided = Set<Int>()
        var frames: [(chunk: Int, frame: [UInt8], bases: [SHA256Digest])] = []
        var missing = 0
        var missingBytes: UInt64 = 0
        var replaced: UInt64 = 0
        for file in target.index.files {
            var offset: UInt64 = 0
            // A file whose first tries all fail was replaced, not edited: the rest of it is not tried.
            var tried = 0
            var kept = 0
            for c in file.chunks {
                let chunk = target.index.chunks[c]
                defer { offset += UInt64(chunk.uncompressedSize) }
                guard !held.contains(chunk.id), decided.insert(c).inserted else { continue }
                missing += 1
                missingBytes += UInt64(chunk.compressedSize)
                guard let old = baseFiles[file.path], kept > 0 || tried < Self.triesPerReplacedFile else { continue }
                let baseChunks = Self.covering(
                    old, in: base.index, from: offset - min(offset, 2048),
                    to: offset + UInt64(chunk.uncompressedSize) + 2048)
                guard !baseChunks.isEmpty else { continue }
                var prefix: [UInt8] = []
                for b in baseChunks { prefix += try base.chunk(b, using: decompressor) }
                let plain = try target.chunk(c, using: decompressor)
                let frame = try compressor.compress(plain, prefix: prefix)
                tried += 1
                let cost = Double(frame.count + 52 + 32 * baseChunks.count)
                guard cost < keepBelow * Double(chunk.compressedSize) else { continue }
                replaced += UInt64(chunk.compressedSize)
                kept += 1
                frames.append((c, frame, baseChunks.map { base.index.chunks[$0].id }))
            }
        }
        frames.sort { $0.chunk < $1.chunk }
        let baseIndex = base.indexBytes
        let targetIndex = target.indexBytes
        var indexDelta = try compressor.compress(targetIndex, prefix: baseIndex)
        if indexDelta.count >= targetIndex.count { indexDelta = [] }
        let tableLength = frames.reduce(0) { $0 + 52 + 32 * $1.bases.count }
        var next = UInt64(PackDelta.headerSize + indexDelta.count + tableLength)
        var entries: [PackDelta.Entry] = []
        for f in frames {
            let chunk = target.index.chunks[f.chunk]
            entries.append(
                PackDelta.Entry(
                    target: chunk.id, offset: next, length: UInt32(f.frame.count), targetSize: chunk.uncompressedSize,
                    bases: f.bases))
            next += UInt64(f.frame.count)
        }
        let delta = PackDelta(
            base: base.packDigest, target: target.packDigest, indexDelta: indexDelta,
            targetIndexLength: UInt32(targetIndex.count), entries: entries)
        var bytes = delta.encodedPrefix
        bytes.reserveCapacity(Int(next))
        for f in frames { bytes += f.frame }
        return Result(
            bytes: bytes, delta: delta, missingChunks: missing, missingBytes: missingBytes, replacedBytes: replaced)
    }

    /// Chunks of a file tried without any delta kept before the rest of the file is left out.
    static let triesPerReplacedFile = 4

    /// The chunks of `file` (indexes into `index.chunks`) that overlap bytes `from..<to` of it, at
    /// most ``PackDelta/maximumBases``; past the file's end, its last chunk.
    static func covering(_ file: PackIndex.File, in index: PackIndex, from: UInt64, to: UInt64) -> [Int] {
        var result: [Int] = []
        var offset: UInt64 = 0
        for c in file.chunks {
            let end = offset + UInt64(index.chunks[c].uncompressedSize)
            if end > from && offset < to && !result.contains(c) { result.append(c) }
            if result.count == PackDelta.maximumBases || offset >= to { break }
            offset = end
        }
        if result.isEmpty, let last = file.chunks.last { result = [last] }
        return result
    }
}
