import BacklotBasics
import BacklotCrypto
import BacklotZstd

/// Makes the delta file (``PackDelta``, `docs/format.md` §14) that takes a client from one
/// version of a pack to another.
///
/// For each chunk of the target that the base does not hold, the chunks of the file's old version
/// that together hold the most of its bytes wherever they are (sampled: ``ChunkResemblance``, for
/// an old file of at most 64 MiB) or, when none shares any, those that covered the same bytes are
/// its bases (four at most); a file without an old version is compared with the base's files the
/// target no longer has (64 MiB of them at most: a file renamed and edited). The old version is
/// the base's file at that path, else the one sharing the most chunks with it (a rename or a
/// move), else the only one of the same name; the bytes are found where the chunks both versions
/// hold say the edits before moved them (at most four chunks overlapping the range; for a file
/// that grew, its last chunk).
///
/// Consecutive changed chunks share one frame (``FrameList``: up to 1 MiB of them, one variant,
/// their bases together at most 64 chunks and 8 MiB, in the order first used): a frame and its
/// table entry then cost once for many chunks, and each chunk compresses against the others too
/// (many small files edited alike). A frame is kept when it and its table entry take under 98 % of
/// the chunks' own frames; one that does not is tried chunk by chunk. A file that shares no chunk
/// with its old version is tried chunk by chunk until one is worth a delta (then the rest shares
/// frames: a database after a `VACUUM`); when its first four tries of a chunk worth a delta (a
/// frame of 4 KiB or more) give none it is taken as replaced, and the rest of it is not tried (so a
/// version of new content costs little to process). The target's index is compressed against the
/// base's, both in their delta form (``PackIndex/deltaForm(_:undo:)``). Frames are made at level 3
/// and again at `level` (9) when they are edits (``FrameList``): level 3 alone left 10 % more on the
/// corpus family, level 9 throughout took 1.7× the processing time (docs/benchmarks.md). Output is
/// deterministic for the same packs, level and libzstd.
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

    public init(level: Int32 = 9, keepBelow: Double = 0.98) {
        self.level = level
        self.keepBelow = keepBelow
    }

    /// A built delta: its file bytes and what it saves.
    public struct Result: Sendable {
        /// The whole delta file.
        public let bytes: [UInt8]
        public let delta: PackDelta
        /// The delta's entries, chunks named by ID.
        public let entries: [PackDelta.Entry]
        /// Chunks of the target that the base lacks (each costs its frame without the delta).
        public let missingChunks: Int
        /// Compressed bytes of those chunks' frames.
        public let missingBytes: UInt64
        /// The frames the delta replaces: their compressed bytes.
        public let replacedBytes: UInt64
        /// How many chunks the delta rebuilds.
        public var rebuiltChunks: Int { delta.rebuiltChunkCount }
    }

    /// A pack as the builder reads it: its index (checked), the index's bytes, and its frames by
    /// range (a local file, or an object in a bucket read by ranges).
    public struct Input {
        public let index: PackIndex
        public let indexBytes: [UInt8]
        public let packDigest: SHA256Digest
        /// Reads `count` bytes of the pack at `offset`.
        public let read: (_ count: Int, _ offset: UInt64) throws -> [UInt8]
        /// Whether each chunk read is checked against its SHA-256 (true unless every chunk of the
        /// pack was checked when it was stored).
        public let checksChunks: Bool

        /// - Parameter checksChunks: false only for a pack whose every chunk was checked against
        ///   its ID when it was stored (a repository's processed version): the builder then skips
        ///   the second hash (a sixth of its time). A delta is never trusted for that: a client
        ///   checks every chunk it rebuilds against the signed index.
        public init(
            index: PackIndex, indexBytes: [UInt8], packDigest: SHA256Digest, checksChunks: Bool = true,
            read: @escaping (_ count: Int, _ offset: UInt64) throws -> [UInt8]
        ) {
            self.index = index
            self.indexBytes = indexBytes
            self.packDigest = packDigest
            self.checksChunks = checksChunks
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
            let frame = try read(Int(chunk.compressedSize), chunk.offset)
            guard checksChunks else {
                do {
                    return try decompressor.decompress(
                        frame, expectedSize: Int(chunk.uncompressedSize), dictionary: index.dictionary)
                } catch let e as BacklotError {
                    throw BacklotError(
                        .corruptArchive, e.message,
                        context: "pack \(packDigest.short)…: chunk \(c) at offset \(chunk.offset)")
                }
            }
            return try PackReader.decode(
                frame, chunk: chunk, chunkIndex: c, dictionary: index.dictionary, using: decompressor,
                source: "pack \(packDigest.short)…")
        }
    }

    /// Builds the delta from `base` to `target` (local packs).
    /// - Throws: what reading either pack throws (``BacklotError/Code/corruptArchive``, ``BacklotError/Code/io``).
    public func build(base: PackReader, target: PackReader) throws -> Result {
        try build(base: try Input(base), target: try Input(target))
    }

    /// Builds the delta from `base` to `target`.
    /// - Parameters:
    ///   - samples: the chunks' samples, shared by the deltas into one target (its bases share
    ///     most chunks: each is sampled once, whichever build comes to it first). The delta is
    ///     the same with or without a shared cache when every chunk's bytes are its ID's (see
    ///     ``ChunkSampleCache``).
    ///   - isCancelled: looked at before each of the target's files; when it returns true the
    ///     build stops with ``BacklotError/Code/cancelled``.
    /// - Throws: what reading either pack throws (``BacklotError/Code/corruptArchive``, ``BacklotError/Code/io``),
    ///   ``BacklotError/Code/cancelled``.
    public func build(
        base: Input, target: Input, samples: ChunkSampleCache = ChunkSampleCache(), isCancelled: () -> Bool = { false }
    ) throws -> Result {
        let compressor = ZstdCompressor(level: level)
        let decompressor = ZstdDecompressor()
        let held = Set(base.index.chunks.map(\.id))
        let targetIDs = Set(target.index.chunks.map(\.id))
        let old = OldFiles(base.index)
        var counted = Set<Int>()
        var claimed = Set<Int>()
        var frames = FrameList(
            first: ZstdCompressor(level: min(level, Self.firstLevel)), best: compressor, keepBelow: keepBelow,
            target: target.index)
        var missing = 0
        var missingBytes: UInt64 = 0
        // The base's files the target no longer has (renamed or deleted), sampled once when a
        // target file has no old version: a file renamed and edited is found by its bytes.
        let targetPaths = Set(target.index.files.map(\.path))
        var removed: (chunks: OldChunks, resemblance: ChunkResemblance)? = nil
        for file in target.index.files {
            if isCancelled() {
                throw BacklotError(
                    .cancelled, "the delta's building was cancelled", context: "pack \(target.packDigest.short)…")
            }
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
            // The old file's chunks, each decompressed once when needed, and where each of their
            // bytes went: when the old file is small enough to hold (``resemblanceLimit``).
            // Those of an old file too large to sample are read again when needed, not kept.
            var oldChunks = OldChunks(
                base: base, decompressor: decompressor,
                keeps: oldFile.map { $0.size <= Self.resemblanceLimit } ?? true)
            var resemblance: ChunkResemblance? = nil
            // Whether `resemblance` holds every chunk of the old file. First it holds only those
            // the target no longer has: an edit's bytes are in the chunks it changed, and the rest
            // of an edited file (most of it) need not be read. A new chunk that leaves enough of
            // its samples unfound there (bytes copied from a part left as it was, or new bytes)
            // has the whole old file looked at, as ``ChunkResemblance/Match/unfound`` says.
            var whole = true
            if let oldFile, oldFile.size <= Self.resemblanceLimit {
                let gone = oldFile.chunks.filter { !targetIDs.contains(base.index.chunks[$0].id) }
                whole = gone.count == oldFile.chunks.count
                resemblance = try ChunkResemblance(
                    chunks: gone.map { ($0, base.index.chunks[$0].id) }, cache: samples, bytes: oldChunks.bytes)
            } else if oldFile == nil {
                if removed == nil {
                    var budget = Self.resemblanceLimit
                    var chosen = Set<Int>()
                    for f in base.index.files where !targetPaths.contains(f.path) && f.size <= budget {
                        budget -= f.size
                        chosen.formUnion(f.chunks)
                    }
                    let chunks = OldChunks(base: base, decompressor: decompressor, keeps: true)
                    let resemblance = try ChunkResemblance(
                        chunks: chosen.sorted().map { ($0, base.index.chunks[$0].id) }, cache: samples,
                        bytes: chunks.bytes)
                    removed = (chunks, resemblance)
                }
                if let removed { (oldChunks, resemblance) = removed }
            }
            // Frames never mix variants: a device reads the frames of its own variant's chunks only.
            let variant = (try? VariantMarker.find(in: file.path)).map { "\($0.dimension.suffix)\($0.value)" } ?? ""
            var failures = 0
            // An edited file's chunks go into shared frames, tried together; so do a small file's
            // (tried whole, as a replaced file's first chunks would be). A file that shares no chunk
            // with its old version is tried chunk by chunk until one is worth a delta.
            var grouped = edited || file.chunks.count <= Self.triesPerReplacedFile
            var offset: UInt64 = 0
            // Where the new file's bytes are in the old one: moved by the edits before them, found
            // again at each chunk both versions hold.
            var shift: Int64 = 0
            for (c, chunk) in zip(file.chunks, chunks) {
                defer { offset += UInt64(chunk.uncompressedSize) }
                if let oldFile, let at = old.offset(of: chunk.id, in: oldFile.path) {
                    shift = Int64(clamping: at) - Int64(clamping: offset)
                }
                guard !held.contains(chunk.id), !claimed.contains(c) else { continue }
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
                var baseChunks: [Int] = []
                if let current = resemblance {
                    // The new chunk's samples: the same in each delta into this target, taken once.
                    let taken = samples.samples(of: chunk.id) { ChunkResemblance.indexSamples(plain) }
                    var match = current.similar(to: taken, size: plain.count, atMost: PackDelta.maximumBases)
                    if match.unfound, !whole, let oldFile {
                        let all = try ChunkResemblance(
                            chunks: oldFile.chunks.map { ($0, base.index.chunks[$0].id) }, cache: samples,
                            bytes: oldChunks.bytes)
                        (resemblance, whole) = (all, true)
                        match = all.similar(to: taken, size: plain.count, atMost: PackDelta.maximumBases)
                    }
                    baseChunks = match.chunks
                }
                if baseChunks.isEmpty, let oldFile {
                    baseChunks = Self.covering(
                        oldFile, in: base.index, from: start - min(start, 2048),
                        to: start + UInt64(chunk.uncompressedSize) + 2048)
                }
                guard !baseChunks.isEmpty else { continue }
                var bases: [(Int, [UInt8])] = []
                for b in baseChunks { bases.append((b, try oldChunks.bytes(b))) }
                if grouped {
                    claimed.insert(c)
                    try frames.add(FrameList.Member(chunk: c, plain: plain, bases: bases), variant: variant)
                } else if try frames.tryAlone(FrameList.Member(chunk: c, plain: plain, bases: bases), variant: variant)
                {
                    // Not replaced after all (a database after a `VACUUM` shares no chunk with its
                    // old version, but its pages): the rest goes into shared frames.
                    claimed.insert(c)
                    grouped = true
                } else if chunk.compressedSize >= Self.worthTrying {
                    failures += 1
                }
            }
        }
        try frames.flush()
        let baseIndex = base.indexBytes
        let targetIndex = target.indexBytes
        let sorted = frames.kept.sorted { $0.targets[0] < $1.targets[0] }
        // Base chunks every device holds: those of files of no variant.
        var shared = Set<Int>()
        for f in base.index.files where (try? VariantMarker.find(in: f.path)) == nil { shared.formUnion(f.chunks) }
        var (early, rest) = Self.early(sorted, base: base.index, target: target.index, shared: shared)
        // Made between the indexes' delta forms (references renumbered by an early change cost
        // nothing), the early frames' chunks without their IDs; none when either does not walk,
        // or when it is not smaller than the index (and then no frame is early).
        var indexDelta: [UInt8] = []
        var indexBases: [Int] = []
        if let from = PackIndex.deltaForm(baseIndex), let formed = PackIndex.deltaForm(targetIndex),
            let to = PackIndex.blankingIDs(formed, of: early.flatMap(\.targets))
        {
            indexDelta = try compressor.compress(to, prefix: from)
            // A new dictionary (small files changed): compressed against the base content it was
            // trained from, kept when that is smaller, its table entries counted.
            if let dictionary = target.index.dictionary?.bytes {
                let bases = try IndexBases.choose(
                    dictionary: dictionary, old: base.index.dictionary?.bytes, base: base, among: shared,
                    using: decompressor)
                if !bases.isEmpty {
                    var prefix: [UInt8] = []
                    for b in bases { prefix += try base.chunk(b, using: decompressor) }
                    let smaller = try compressor.compress(to, prefix: prefix + from)
                    if smaller.count + 3 * bases.count < indexDelta.count {
                        (indexDelta, indexBases) = (smaller, bases)
                    }
                }
            }
            if indexDelta.count >= targetIndex.count { (indexDelta, indexBases) = ([], []) }
        }
        if indexDelta.isEmpty { (early, rest) = ([], sorted) }
        let kept = early + rest
        let slots = kept.map { PackDelta.Slot(targets: $0.targets, bases: $0.bases, length: UInt32($0.frame.count)) }
        // Version 2 when nothing needs version 3: a reader of version 2 still uses it.
        let delta =
            early.isEmpty && indexBases.isEmpty
            ? PackDelta(
                base: base.packDigest, target: target.packDigest, indexDelta: indexDelta,
                targetIndexLength: UInt32(targetIndex.count), slots: slots)
            : PackDelta(
                base: base.packDigest, target: target.packDigest, indexDelta: indexDelta,
                targetIndexLength: UInt32(targetIndex.count), slots: slots, earlyCount: early.count,
                indexBases: indexBases)
        var bytes = delta.encodedPrefix
        var entries: [PackDelta.Entry] = []
        var next = UInt64(bytes.count)
        for f in kept {
            entries.append(
                PackDelta.Entry(
                    targets: f.targets.map {
                        PackDelta.Target(id: target.index.chunks[$0].id, size: target.index.chunks[$0].uncompressedSize)
                    }, offset: next, length: UInt32(f.frame.count), bases: f.bases.map { base.index.chunks[$0].id }))
            next += UInt64(f.frame.count)
        }
        bytes.reserveCapacity(Int(next))
        for f in kept { bytes += f.frame }
        return Result(
            bytes: bytes, delta: delta, entries: entries, missingChunks: missing, missingBytes: missingBytes,
            replacedBytes: frames.replacedBytes)
    }

    /// The frames of a delta as they are made: consecutive changed chunks of edited files share a
    /// frame (up to ``groupBytes`` of them, of one variant, their bases together at most
    /// ``PackDelta/maximumEntryBases`` chunks and ``groupBaseBytes`` bytes) — a frame and its
    /// table entry cost less for many chunks than for each, and the chunks compress against each
    /// other. A frame is kept when it costs less than `keepBelow` of the chunks' own frames; a
    /// frame that does not is tried chunk by chunk.
    struct FrameList {
        struct Member {
            let chunk: Int
            let plain: [UInt8]
            let bases: [(Int, [UInt8])]
        }

        struct Frame {
            let targets: [Int]
            let bases: [Int]
            let frame: [UInt8]
            /// The variant of its chunks' files ("" for the files every device installs).
            let variant: String
        }

        /// A frame is made at `first`'s level; when that takes a quarter of the chunks' own frames
        /// or less (an edit: mostly matches into the bases, which the higher level finds fast) it is
        /// made again at `best`'s, and the smaller kept. New content against old (a file replaced
        /// by one of the same kind) stays at the first level, where a higher one costs most.
        let first: ZstdCompressor
        let best: ZstdCompressor
        let keepBelow: Double
        let target: PackIndex
        private(set) var kept: [Frame] = []
        private(set) var replacedBytes: UInt64 = 0
        private var pending: [Member] = []
        private var pendingVariant = ""
        private var pendingBytes = 0
        private var pendingBases: [Int: Int] = [:]
        private var pendingBaseBytes = 0

        init(first: ZstdCompressor, best: ZstdCompressor, keepBelow: Double, target: PackIndex) {
            self.first = first
            self.best = best
            self.keepBelow = keepBelow
            self.target = target
        }

        /// Adds a chunk to the frame being filled, first closing it when the chunk would not fit.
        mutating func add(_ m: Member, variant: String) throws {
            let new = m.bases.filter { pendingBases[$0.0] == nil }
            if !pending.isEmpty
                && (variant != pendingVariant || pendingBytes + m.plain.count > DeltaBuilder.groupBytes
                    || pendingBases.count + new.count > PackDelta.maximumEntryBases
                    || pendingBaseBytes + new.reduce(0) { $0 + $1.1.count } > DeltaBuilder.groupBaseBytes)
            {
                try flush()
            }
            for (b, bytes) in m.bases where pendingBases[b] == nil {
                pendingBases[b] = bytes.count
                pendingBaseBytes += bytes.count
            }
            pending.append(m)
            pendingVariant = variant
            pendingBytes += m.plain.count
        }

        /// Compresses the frame being filled; keeps it, or tries its chunks one by one.
        mutating func flush() throws {
            defer {
                pending = []
                pendingBytes = 0
                pendingBases = [:]
                pendingBaseBytes = 0
            }
            guard !pending.isEmpty else { return }
            if pending.count == 1 {
                _ = try tryAlone(pending[0], variant: pendingVariant)
                return
            }
            let members = pending.sorted { $0.chunk < $1.chunk }
            if try keep(members, variant: pendingVariant) { return }
            for m in members { _ = try tryAlone(m, variant: pendingVariant) }
        }

        /// One chunk in a frame of its own: kept when worth it.
        mutating func tryAlone(_ m: Member, variant: String) throws -> Bool { try keep([m], variant: variant) }

        /// Compresses `members` (sorted by chunk) into one frame against their bases (in the order
        /// first used, each once); keeps it when it costs less than `keepBelow` of their frames.
        private mutating func keep(_ members: [Member], variant: String) throws -> Bool {
            var order: [Int] = []
            var prefix: [UInt8] = []
            for m in members {
                for (b, bytes) in m.bases where !order.contains(b) {
                    order.append(b)
                    prefix += bytes
                }
            }
            var plain: [UInt8] = []
            plain.reserveCapacity(members.reduce(0) { $0 + $1.plain.count })
            for m in members { plain += m.plain }
            let whole = members.reduce(UInt64(0)) { $0 + UInt64(target.chunks[$1.chunk].compressedSize) }
            var frame = try first.compress(plain, prefix: prefix)
            if best.level != first.level, UInt64(frame.count) * 4 <= whole {
                let better = try best.compress(plain, prefix: prefix)
                if better.count < frame.count { frame = better }
            }
            let targets = members.map(\.chunk)
            let slot = PackDelta.Slot(targets: targets, bases: order, length: UInt32(frame.count))
            guard Double(frame.count + slot.encodedSize) < keepBelow * Double(whole) else { return false }
            replacedBytes += whole
            kept.append(Frame(targets: targets, bases: order, frame: frame, variant: variant))
            return true
        }
    }

    /// The frames that are early (version 3, `docs/format.md` §14), in order, and the others: the
    /// frames of the files every device installs (a device would otherwise read frames of another
    /// variant) whose bases are all `shared` (held by every device), as long as they stay within ``PackDelta/maximumEarlyFrameBytes`` of frames,
    /// ``PackDelta/maximumEarlyOutputBytes`` rebuilt and ``PackDelta/maximumEarlyBaseBytes`` of
    /// bases. Their chunks' IDs are left out of the index delta: 32 bytes a chunk, most of what a
    /// small update of many small files costs.
    static func early(
        _ frames: [FrameList.Frame], base: PackIndex, target: PackIndex, shared: Set<Int>
    ) -> (early: [FrameList.Frame], rest: [FrameList.Frame]) {
        var early: [FrameList.Frame] = []
        var rest: [FrameList.Frame] = []
        var (frameBytes, output, baseBytes): (UInt64, UInt64, UInt64) = (0, 0, 0)
        for f in frames {
            let out = f.targets.reduce(UInt64(0)) { $0 + UInt64(target.chunks[$1].uncompressedSize) }
            let bases = f.bases.reduce(UInt64(0)) { $0 + UInt64(base.chunks[$1].uncompressedSize) }
            if early.count < PackDelta.maximumEarlyEntries, f.variant.isEmpty, f.bases.allSatisfy(shared.contains),
                frameBytes + UInt64(f.frame.count) <= PackDelta.maximumEarlyFrameBytes,
                output + out <= PackDelta.maximumEarlyOutputBytes, baseBytes + bases <= PackDelta.maximumEarlyBaseBytes
            {
                early.append(f)
                frameBytes += UInt64(f.frame.count)
                output += out
                baseBytes += bases
            } else {
                rest.append(f)
            }
        }
        return (early, rest)
    }

    /// The level every frame is first made at (see ``FrameList``).
    static let firstLevel: Int32 = 3

    /// The most bytes of chunks one frame rebuilds (a chunk larger than this has a frame of its own).
    static let groupBytes = 1 << 20

    /// The most bytes of base chunks one frame of several chunks refers to.
    static let groupBaseBytes = 8 << 20

    /// Chunks of a file that shares no chunk with the base tried without any delta kept before the
    /// rest of the file is left out.
    static let triesPerReplacedFile = 4

    /// The largest old file whose chunks are decompressed and sampled to find where a new chunk's
    /// bytes were (``ChunkResemblance``); a larger one is read by position alone.
    static let resemblanceLimit: UInt64 = 64 << 20

    /// A chunk whose frame is smaller than this (zeros, a short run of text) does not count as a
    /// failed try: its delta could never save its table entry, whatever the file.
    static let worthTrying: UInt32 = 4096

    /// The base's chunks a build has decompressed (to sample them, or as bases), each once when
    /// they are kept: those of an old file of at most ``resemblanceLimit`` bytes, or of the
    /// removed files (the same limit). A larger old file's are read again each time.
    final class OldChunks {
        let base: Input
        let decompressor: ZstdDecompressor
        let keeps: Bool
        private var decompressed: [Int: [UInt8]] = [:]

        init(base: Input, decompressor: ZstdDecompressor, keeps: Bool) {
            self.base = base
            self.decompressor = decompressor
            self.keeps = keeps
        }

        /// The bytes of the base's chunk `c` (read and decompressed the first time).
        func bytes(_ c: Int) throws -> [UInt8] {
            if let known = decompressed[c] { return known }
            let bytes = try base.chunk(c, using: decompressor)
            if keeps { decompressed[c] = bytes }
            return bytes
        }
    }

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
