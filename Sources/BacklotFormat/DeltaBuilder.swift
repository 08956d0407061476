import BacklotBasics
import BacklotCrypto
import BacklotZstd

/// Makes the delta file (``PackDelta``, `docs/format.md` §14) that takes a client from one
/// version of a pack to another.
///
/// For each chunk of the target that the base does not hold, the chunks of the file's old version
/// that together hold the most of its bytes wherever they are (sampled: ``ChunkResemblance``, for
/// an old file of at most 64 MiB) or, when none shares any, those that covered the same bytes are
/// the reference prefix (four chunks at most); a file without an old version is compared with
/// the base's files the target no longer has (64 MiB of them at most: a file renamed and edited).
/// The old version is the base's file at
/// that path, else the one sharing the most chunks with it (a rename or a move), else the only one
/// of the same name; the bytes are found where the chunks both versions hold say the edits before
/// moved them (at most four chunks overlapping the range; for a file that grew, its last chunk).
/// The delta is kept when it is smaller than the chunk's own frame by more than its table entry
/// and 2 % (measured in docs/benchmarks.md: a 10 % margin left 4 % of the update scenario's bytes
/// on the table). A chunk no file's try kept is tried again in the next file that holds it. The
/// target's index is compressed against the base's index the same way. A file that shares no
/// chunk with its old version and whose first four tries of a chunk worth a delta (a frame of
/// 4 KiB or more) give none is taken as replaced, and the rest of it is not tried (so a version of
/// new content costs little to process). Output is deterministic for the same packs, level and
/// libzstd.
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
        let old = OldFiles(base.index)
        var counted = Set<Int>()
        var kept = Set<Int>()
        var frames: [(chunk: Int, frame: [UInt8], bases: [SHA256Digest])] = []
        var missing = 0
        var missingBytes: UInt64 = 0
        var replaced: UInt64 = 0
        // The base's files the target no longer has (renamed or deleted), sampled once when a
        // target file has no old version: a file renamed and edited is found by its bytes.
        let targetPaths = Set(target.index.files.map(\.path))
        var removed: (chunks: [Int: [UInt8]], resemblance: ChunkResemblance)? = nil
        for file in target.index.files {
            let chunks = file.chunks.map { target.index.chunks[$0] }
            guard chunks.contains(where: { !held.contains($0.id) }) else { continue }
            // The base's version of the file: at the same path; else the file it shares the most
            // chunks with (a file renamed or moved, whatever its content); else one of the same name
            // in another folder.
            let oldFile = old.match(for: file, chunks: chunks.map(\.id))
            // A file sharing no chunk with its old version whose first tries all fail was replaced,
            // not edited: the rest of it is not tried (a version of new content costs little to
            // process). A try counts only when the chunk's frame is large enough for a delta to matter.
            let edited = chunks.contains { held.contains($0.id) }
            // The old file's chunks, decompressed once, and where each of their bytes went: when
            // the old file is small enough to hold (``resemblanceLimit``).
            var oldChunks: [Int: [UInt8]] = [:]
            var resemblance: ChunkResemblance? = nil
            if let oldFile, oldFile.size <= Self.resemblanceLimit {
                for b in Set(oldFile.chunks) { oldChunks[b] = try base.chunk(b, using: decompressor) }
                resemblance = ChunkResemblance(chunks: oldFile.chunks.map { ($0, oldChunks[$0] ?? []) })
            } else if oldFile == nil {
                if removed == nil {
                    var budget = Self.resemblanceLimit
                    var bytes: [Int: [UInt8]] = [:]
                    for f in base.index.files where !targetPaths.contains(f.path) && f.size <= budget {
                        budget -= f.size
                        for b in f.chunks where bytes[b] == nil { bytes[b] = try base.chunk(b, using: decompressor) }
                    }
                    removed = (bytes, ChunkResemblance(chunks: bytes.keys.sorted().map { ($0, bytes[$0] ?? []) }))
                }
                oldChunks = removed?.chunks ?? [:]
                resemblance = removed?.resemblance
            }
            var failures = 0
            var offset: UInt64 = 0
            // Where the new file's bytes are in the old one: moved by the edits before them, found
            // again at each chunk both versions hold.
            var shift: Int64 = 0
            for (c, chunk) in zip(file.chunks, chunks) {
                defer { offset += UInt64(chunk.uncompressedSize) }
                if let oldFile, let at = old.offset(of: chunk.id, in: oldFile.path) {
                    shift = Int64(clamping: at) - Int64(clamping: offset)
                }
                guard !held.contains(chunk.id), !kept.contains(c) else { continue }
                if counted.insert(c).inserted {
                    missing += 1
                    missingBytes += UInt64(chunk.compressedSize)
                }
                guard oldFile != nil || resemblance != nil, edited || failures < Self.triesPerReplacedFile else {
                    continue
                }
                let start = UInt64(max(0, Int64(clamping: offset) + shift))
                let plain = try target.chunk(c, using: decompressor)
                // The old chunks holding its bytes wherever they are (a block moved); when none
                // shares any, those at its place in the old file.
                var baseChunks = resemblance?.similar(to: plain, atMost: PackDelta.maximumBases) ?? []
                if baseChunks.isEmpty, let oldFile {
                    baseChunks = Self.covering(
                        oldFile, in: base.index, from: start - min(start, 2048),
                        to: start + UInt64(chunk.uncompressedSize) + 2048)
                }
                guard !baseChunks.isEmpty else { continue }
                var prefix: [UInt8] = []
                for b in baseChunks { prefix += try oldChunks[b] ?? base.chunk(b, using: decompressor) }
                let frame = try compressor.compress(plain, prefix: prefix)
                let cost = Double(frame.count + 52 + 32 * baseChunks.count)
                guard cost < keepBelow * Double(chunk.compressedSize) else {
                    if chunk.compressedSize >= Self.worthTrying { failures += 1 }
                    continue
                }
                replaced += UInt64(chunk.compressedSize)
                kept.insert(c)
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

    /// Chunks of a file that shares no chunk with the base tried without any delta kept before the
    /// rest of the file is left out.
    static let triesPerReplacedFile = 4

    /// The largest old file whose chunks are decompressed and sampled to find where a new chunk's
    /// bytes were (``ChunkResemblance``); a larger one is read by position alone.
    static let resemblanceLimit: UInt64 = 64 << 20

    /// A chunk whose frame is smaller than this (zeros, a short run of text) does not count as a
    /// failed try: its delta could never save its table entry, whatever the file.
    static let worthTrying: UInt32 = 4096

    /// The base's files, found by path, by the chunks they hold, and by name.
    struct OldFiles {
        let index: PackIndex
        var byPath: [String: PackIndex.File] = [:]
        var byName: [String: [PackIndex.File]] = [:]
        /// Each chunk's first places (two at most): its file and offset in it.
        var places: [SHA256Digest: [(path: String, offset: UInt64)]] = [:]

        init(_ index: PackIndex) {
            self.index = index
            for f in index.files {
                byPath[f.path] = f
                byName[Self.name(f.path), default: []].append(f)
                var offset: UInt64 = 0
                for c in f.chunks {
                    let chunk = index.chunks[c]
                    // Up to two places a chunk: enough to tell a chunk held once from one held again.
                    if (places[chunk.id]?.count ?? 0) < 2 { places[chunk.id, default: []].append((f.path, offset)) }
                    offset += UInt64(chunk.uncompressedSize)
                }
            }
        }

        static func name(_ path: String) -> String { String(path.split(separator: "/").last ?? Substring(path)) }

        /// Where a chunk is in the base's file at `path`, nil when it is not there or not only once
        /// in the base (a run of zeros repeats one chunk: it says nothing of where the bytes went).
        func offset(of chunk: SHA256Digest, in path: String) -> UInt64? {
            guard let only = places[chunk], only.count == 1, only[0].path == path else { return nil }
            return only[0].offset
        }

        /// The base's version of a target file: same path, else the file sharing the most of its
        /// chunks (ties to the first in the index), else the only one of the same name.
        func match(for file: PackIndex.File, chunks: [SHA256Digest]) -> PackIndex.File? {
            if let same = byPath[file.path] { return same }
            var shared: [String: Int] = [:]
            for id in Set(chunks) { for place in places[id] ?? [] { shared[place.path, default: 0] += 1 } }
            if let best = shared.max(by: { ($0.value, $1.key) < ($1.value, $0.key) }) { return byPath[best.key] }
            if let named = byName[Self.name(file.path)], named.count == 1 { return named[0] }
            return nil
        }
    }

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
