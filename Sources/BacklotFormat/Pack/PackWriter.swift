import BacklotBasics
import BacklotCrypto
import BacklotZstd
import Dispatch
import Foundation

/// Builds a `.pack` from a manifest and the files it selects (`backlot package`).
///
/// Files are read in pack-path order and cut into content-defined chunks; chunks are hashed and
/// compressed in parallel, stored once each, and written in canonical order, so the result is
/// byte-identical for the same input whatever the thread count. The pack appears at its path only
/// when complete (written beside it, flushed, then renamed).
///
/// ```swift
/// let (manifest, _) = try PackManifest.load(path: "Manifest.json")
/// let selection = try SourceSelection(manifest: manifest, sourceRoot: "Assets")
/// let summary = try PackWriter(options: .init(jobs: 2)).write(manifest: manifest, selection: selection, to: "Tutorial.pack")
/// print(summary.packDigest)
/// ```
public struct PackWriter: Sendable {
    /// How to build.
    public struct Options: Sendable {
        /// zstd level (1…19).
        public var level: Int32
        /// Worker threads for hashing and compressing.
        public var jobs: Int
        /// The chunker's average size (a power of two, 4 KiB…1 MiB).
        public var averageChunkSize: Int
        /// Replace an existing output file.
        public var overwrite: Bool
        /// Train a zstd dictionary when the pack has many small files and it pays (a pack of
        /// format version 2, `docs/format.md` §5); false always makes a version-1 pack, which
        /// Backlot releases before format version 2 can read.
        public var dictionary: Bool

        public init(
            level: Int32 = 3, jobs: Int = ProcessInfo.processInfo.activeProcessorCount,
            averageChunkSize: Int = Chunker.defaultAverageSize, overwrite: Bool = false, dictionary: Bool = true
        ) {
            self.level = level
            self.jobs = max(1, jobs)
            self.averageChunkSize = averageChunkSize
            self.overwrite = overwrite
            self.dictionary = dictionary
        }
    }

    /// What a build did.
    public struct Summary: Sendable {
        public let packDigest: SHA256Digest
        public let files: Int
        /// Bytes read from the files.
        public let bytesIn: UInt64
        /// Size of the pack file.
        public let bytesOut: UInt64
        /// Chunks stored (each once).
        public let chunks: Int
        /// Chunk references (chunks cut), before deduplication.
        public let chunkReferences: Int
        /// Uncompressed bytes not stored again because an identical chunk was already stored.
        public let deduplicatedBytes: UInt64
        public let seconds: Double
    }

    public let options: Options

    public init(options: Options = Options()) {
        self.options = options
    }

    /// Writes the pack.
    /// - Parameter progress: called with (bytes read so far, total bytes) as work completes.
    /// - Throws: ``BacklotError/Code/alreadyExists`` (unless ``Options/overwrite``),
    ///   ``BacklotError/Code/invalidSource`` if a file changed while being read, ``BacklotError/Code/io``.
    ///   Nothing is left at `path` on failure.
    public func write(
        manifest: PackManifest, selection: SourceSelection, to path: String,
        progress: (@Sendable (UInt64, UInt64) -> Void)? = nil
    ) throws -> Summary {
        let start = Date()
        try Self.checkLimits(selection, path: path)
        let output = try AtomicFile(path: path, overwrite: options.overwrite)
        TemporaryFiles.shared.register(output.temporaryPath)
        defer { TemporaryFiles.shared.unregister(output.temporaryPath) }
        do {
            let root = try DirectoryHandle(path: selection.sourceRoot)
            let chunker = Chunker(averageSize: options.averageChunkSize)
            let prepared =
                options.dictionary
                ? try PackDictionary.train(
                    for: selection.files, root: root, level: options.level, jobs: options.jobs, chunker: chunker,
                    readingAhead: true) : .nothing
            let dictionary = prepared.dictionary
            // The build's own threads, not Dispatch's global queue: a caller that is itself on one
            // of the queue's few threads (a test, an async task) would otherwise wait for a
            // thread that may never come free.
            let workers = BlockingPool(threads: options.jobs, name: "backlot-pack")
            defer { workers.stop() }  // after the last batch, or a failure: no thread left behind
            let largeFileDigests = LargeFileDigests()
            defer { largeFileDigests.stop() }
            let writes = PackFileWrites(descriptor: output.descriptor)
            defer { writes.stop() }
            // The header's place; it is written last, once the index is known.
            try writes.write([[UInt8](repeating: 0, count: PackHeader.size)])
            var state = BuildState(
                jobs: options.jobs, level: options.level, dictionary: dictionary, root: root,
                workers: workers, largeFileDigests: largeFileDigests, writes: writes)
            state.ahead = prepared.ahead
            state.samples = prepared.samples
            state.offset = UInt64(PackHeader.size)
            let total = selection.files.reduce(0) { $0 + $1.size }
            var done: UInt64 = 0
            let report: (UInt64) -> Void = { bytes in
                done += bytes
                progress?(done, total)
            }
            // Sized once (at least a chunk a file), not grown by doubling with two copies alive.
            state.stored = StoredChunks(expected: selection.files.count)
            state.digests = [SHA256Digest?](repeating: nil, count: selection.files.count)
            state.report = report

            // Small files are read, hashed, cut and compressed whole by the worker threads, a
            // batch at a time (those read ahead while the dictionary was trained are only
            // compressed); a large file is read here and its chunks are spread over the threads.
            // Either way chunks are stored in the order of the files, so the pack is the same
            // bytes whatever the thread count, the mix or what was read ahead.
            var small = SmallBatch()
            for (fileIndex, file) in selection.files.enumerated() {
                if file.size <= SmallBatch.fileLimit {
                    small.add(fileIndex, size: file.size)
                    if small.isFull { try state.process(&small, files: selection.files, chunker: chunker) }
                    continue
                }
                try state.process(&small, files: selection.files, chunker: chunker)
                try state.read(file: file, index: fileIndex, chunker: chunker)
            }
            try state.process(&small, files: selection.files, chunker: chunker)
            try state.flush()
            for (fileIndex, digest) in largeFileDigests.finish() { state.digests[fileIndex] = digest }
            let chunkCount = state.stored.chunks.count
            let indexBytes = state.takeIndex(
                files: selection.files,
                metadata: PackMetadata(manifest, variants: selection.variants),
                chunking: (chunker.minimumSize, chunker.averageSize, chunker.maximumSize))
            guard UInt64(indexBytes.count) <= PackHeader.maximumIndexLength else {
                throw BacklotError(
                    .invalidSource,
                    "the pack's index would be \(indexBytes.count) bytes; at most \(PackHeader.maximumIndexLength) are allowed (docs/format.md §10)",
                    context: path,
                    hint: "split the content into several packs (fewer files, or shorter paths, per pack)")
            }
            let digest = SHA256.hash(indexBytes)
            let header = PackHeader(
                formatVersion: PackIndex.formatVersion(ofIndex: indexBytes) ?? 1, indexOffset: state.offset,
                indexLength: UInt64(indexBytes.count),
                indexDigest: digest)
            // Verify before anything is visible: the index must pass every rule a reader applies
            // (paths, metadata size, limits), so package never writes a pack that verify refuses.
            // Checked on a worker while the index is written and the pack flushed; the header,
            // which makes the pack readable, is written only once it passed.
            let checked = DispatchGroup()
            let refusal = FirstFailure()
            let index = indexBytes
            let check: @Sendable () -> Void = {
                do {
                    _ = try PackIndex.decode(index, header: header, source: path, keepingFiles: false)
                } catch {
                    refusal.record(0, error)
                }
            }
            if !workers.submit(countedBy: checked, check) { check() }
            try state.writeBuffered(indexBytes)
            try state.flushWrites()
            checked.wait()
            if let e = refusal.first as? BacklotError {
                throw BacklotError(
                    .invalidSource, "the pack would break a rule of the format: \(e.message)", context: path,
                    hint: "change the manifest (paths, destinations, userInfo) so that the pack follows docs/format.md")
            } else if let e = refusal.first {
                throw e
            }
            try header.encoded.withUnsafeBytes { try output.descriptor.write($0, at: 0) }
            try output.commit()
            return Summary(
                packDigest: digest, files: selection.files.count, bytesIn: done,
                bytesOut: state.offset, chunks: chunkCount,
                chunkReferences: state.references, deduplicatedBytes: state.deduplicatedBytes,
                seconds: Date().timeIntervalSince(start))
        } catch {
            output.discard()
            throw error
        }
    }
}

extension PackWriter {
    /// Refuses, before anything is read, a selection that no reader would accept: more files, or
    /// more path bytes in all, than a pack may hold (`docs/format.md` §10).
    /// - Parameters: fileCount, pathBytes: the limits (the format's, but in tests).
    static func checkLimits(
        _ selection: SourceSelection, path: String, fileCount: Int = PackIndex.Limits.fileCount,
        pathBytes: Int = PackIndex.Limits.pathBytes
    ) throws {
        let count = selection.files.count
        guard count <= fileCount else {
            throw BacklotError(
                .invalidSource,
                "the manifest selects \(count) files; a pack may hold at most \(fileCount) (docs/format.md §10)",
                context: path, hint: "split the content into several packs (each with its own file selectors)")
        }
        let total = selection.files.reduce(0) { $0 + $1.packPath.utf8.count }
        guard total <= pathBytes else {
            throw BacklotError(
                .invalidSource,
                "the selected files' paths hold \(total) bytes; a pack's paths may hold at most \(pathBytes) in all (docs/format.md §10)",
                context: path, hint: "split the content into several packs, or use shorter paths")
        }
    }
}

/// The mutable state of one build: the batch being gathered, the chunk table, the output position.
extension PackWriter {
    /// The bytes of a large file's chunks the main thread gathers before the worker threads hash
    /// and compress them; two batches are in memory at once, one read while the other is compressed.
    static let largeFileBatchBytes = 16 << 20
}

private struct BuildState {
    let jobs: Int
    let level: Int32
    /// The dictionary every chunk is compressed against, if the pack has one.
    let dictionary: ZstdDictionary?
    /// The chunks stored so far (the chunk table), found by ID.
    var stored = StoredChunks(expected: 0)
    /// Every chunk reference, in file order: the file (by number) and the chunk. Appended in
    /// file order (chunks are appended in the order of the files), one flat pair of arrays
    /// rather than an array per file (200,000 of them: 10 MB at the busiest time).
    var referenceFiles: [Int32] = []
    var referenceChunks: [Int32] = []
    var offset: UInt64 = 0
    var references = 0
    var deduplicatedBytes: UInt64 = 0
    var batch: [(file: Int, bytes: [UInt8])] = []
    var batchBytes = 0
    /// The batches the worker threads have, oldest first: at most one once a call has returned
    /// (``flush(wait:)``, ``process(_:files:chunker:)``), none after the last flush.
    var inFlight: [InFlight] = []
    /// Each file's SHA-256, by number, set as a batch of small files is appended, and for the
    /// large files once the last batch is (``LargeFileDigests``).
    var digests: [SHA256Digest?] = []
    /// Told how many more bytes of the sources are done.
    var report: (UInt64) -> Void = { _ in }
    /// Compressed chunks not yet handed to ``writes``, and their size.
    var unwritten: [[UInt8]] = []
    var unwrittenBytes = 0
    static let batchLimit = PackWriter.largeFileBatchBytes
    /// The large-file read buffer, made once (not per file: zeroing 8 MiB per file was most of
    /// the time packaging small files took).
    var readBuffer: [UInt8] = []

    /// The source root; every file is opened beneath it, through no link (``DirectoryHandle``).
    let root: DirectoryHandle
    /// The first small files, read, cut and hashed while the dictionary was trained.
    var ahead: ReadAhead?
    /// The dictionary's samples, packed already (``PackDictionary/Prepared/samples``).
    var samples: [Int: SmallBatch.Packed] = [:]

    /// The threads that hash and compress (``PackWriter/write(manifest:selection:to:progress:)``'s pool).
    let workers: BlockingPool
    /// The large files' SHA-256s, made on a thread of their own from the chunks cut.
    let largeFileDigests: LargeFileDigests
    /// The pack file's writes, made on a thread of their own.
    let writes: PackFileWrites

    init(
        jobs: Int, level: Int32, dictionary: ZstdDictionary?, root: DirectoryHandle,
        workers: BlockingPool, largeFileDigests: LargeFileDigests, writes: PackFileWrites
    ) {
        self.writes = writes
        self.root = root
        self.workers = workers
        self.largeFileDigests = largeFileDigests
        self.jobs = jobs
        self.level = level
        self.dictionary = dictionary
    }

    /// The index of what was built, encoded straight from the chunk table, the references and the
    /// selection (no ``PackIndex/File`` is made), then every table is freed (and what only
    /// chunking needed, before): 200,000 files take tens of MB less at the peak.
    mutating func takeIndex(
        files: [SourceSelection.File], metadata: PackMetadata,
        chunking: (minimum: Int, average: Int, maximum: Int)
    ) -> [UInt8] {
        readBuffer = []
        let chunks = stored.take()
        var encoder = PackIndexEncoder(
            metadata: PackIndex.metadataJSON(metadata, chunking: chunking), chunks: chunks, dictionary: dictionary,
            fileCount: files.count, pathBytes: files.reduce(0) { $0 + $1.packPath.utf8.count },
            references: referenceChunks.count)
        var next = 0
        for fileIndex in files.indices {
            let first = next
            while next < referenceFiles.count, referenceFiles[next] == fileIndex { next += 1 }
            let refs = referenceChunks[first..<next].lazy.map { Int($0) }
            let size = refs.reduce(UInt64(0)) { $0 + UInt64(chunks[$1].uncompressedSize) }
            encoder.add(
                path: files[fileIndex].packPath, mode: files[fileIndex].mode, size: size, digest: digests[fileIndex]!,
                chunks: refs)
        }
        digests = []
        referenceFiles = []
        referenceChunks = []
        return encoder.bytes
    }

    /// Reads one file, cutting it into chunks queued for compression (and for its SHA-256,
    /// ``LargeFileDigests``).
    mutating func read(file: SourceSelection.File, index: Int, chunker: Chunker) throws {
        // Opened once: a link or a special file swapped in since selection is refused.
        let fd = try file.open(beneath: root)
        defer { fd.close() }
        let capacity = max(8 << 20, chunker.maximumSize * 2)
        if readBuffer.count < capacity { readBuffer = [UInt8](repeating: 0, count: capacity) }
        var buffer = readBuffer
        readBuffer = []
        defer { readBuffer = buffer }
        var filled = 0
        var position = 0
        var eof = false
        var total: UInt64 = 0
        while true {
            if !eof && filled - position < chunker.maximumSize {
                if position > 0 {
                    buffer.withUnsafeMutableBytes { b in
                        b.baseAddress!.copyMemory(from: b.baseAddress! + position, byteCount: filled - position)
                    }
                    filled -= position
                    position = 0
                }
                let n = try buffer.withUnsafeMutableBytes { b in
                    try fd.read(into: UnsafeMutableRawBufferPointer(rebasing: b[filled...]))
                }
                if n == 0 { eof = true }
                filled += n
                total += UInt64(n)
                report(UInt64(n))
                continue
            }
            if position == filled { break }
            let length = buffer.withUnsafeBytes { b in
                chunker.cutPoint(in: UnsafeRawBufferPointer(rebasing: b[position..<filled]))
            }
            batch.append((index, Array(buffer[position..<position + length])))
            batchBytes += length
            position += length
            if batchBytes >= BuildState.batchLimit { try flush(wait: false) }
        }
        guard total == file.size else {
            throw BacklotError(
                .invalidSource,
                "the file changed while it was being packaged (\(file.size) bytes when selected, \(total) read)",
                context: file.sourcePath, hint: "package again once nothing is writing to the source tree")
        }
    }

    /// A batch the worker threads have: a large file's chunks (``flush(wait:)``), or small files,
    /// each whole (``process(_:files:chunker:)``). Appended oldest first, so that chunks are stored
    /// in the order of the files whatever the mix.
    enum InFlight {
        case chunks(work: [(file: Int, length: Int)], results: ParallelResults, done: DispatchGroup)
        case files(work: [Int], bytes: UInt64, results: SmallBatch.Results, failures: FirstFailure, done: DispatchGroup)
    }

    /// Hands the gathered chunks to the worker threads to hash and compress, then appends what
    /// the threads had before (its new chunks in order). With `wait`, appends this batch too
    /// before returning; without, the workers hash and compress it while the next batch is read
    /// (the reading thread's own work — reading and cutting — no longer waits for theirs, nor
    /// theirs for it; the file's SHA-256 is made by ``LargeFileDigests``), and the next batch's
    /// threads start before this one's last chunks are done, so that no core waits for the
    /// slowest thread of a batch.
    mutating func flush(wait: Bool = true) throws {
        startChunks()
        try appendInFlight(keeping: wait ? 0 : 1)
    }

    /// Starts the worker threads on the gathered chunks, if any.
    private mutating func startChunks() {
        guard !batch.isEmpty else { return }
        let work = batch
        batch = []
        batchBytes = 0
        let results = ParallelResults(count: work.count)
        let next = AtomicCounter()
        let level = self.level
        let dictionary = self.dictionary
        // A snapshot of the chunks stored so far: a chunk found there is not compressed again
        // (one appended meanwhile is found again by `append`, which stores each chunk once).
        let alreadyStored = self.stored
        let done = DispatchGroup()
        largeFileDigests.hash(work, countedBy: done)
        for _ in 0..<jobs {
            workers.submit(countedBy: done) {
                let compressor = ZstdCompressor(level: level, dictionary: dictionary)
                while true {
                    let i = next.increment()
                    guard i < work.count else { return }
                    let bytes = work[i].bytes
                    let id = SHA256.hash(bytes)
                    if alreadyStored.index(of: id) != nil {
                        results.set(i, .init(id: id, compressed: nil, error: nil))
                        continue
                    }
                    do {
                        results.set(i, .init(id: id, compressed: try compressor.compress(bytes), error: nil))
                    } catch {
                        results.set(i, .init(id: id, compressed: nil, error: error))
                    }
                }
            }
        }
        inFlight.append(.chunks(work: work.map { ($0.file, $0.bytes.count) }, results: results, done: done))
    }

    /// Waits for the oldest batches the workers have and appends their chunks in order, until at
    /// most `keeping` are left in flight.
    mutating func appendInFlight(keeping: Int = 0) throws {
        while inFlight.count > keeping {
            let oldest = inFlight.removeFirst()
            switch oldest {
            case .chunks(let work, let results, let done):
                done.wait()
                for (i, item) in work.enumerated() {
                    let r = results.get(i)
                    if let error = r.error { throw error }
                    try append(file: item.file, id: r.id, length: item.length, compressed: r.compressed)
                }
            case .files(let work, let bytes, let results, let failures, let done):
                done.wait()
                if let error = failures.first { throw error }
                for (i, fileIndex) in work.enumerated() {
                    let packed = results.get(i)
                    for piece in packed.pieces {
                        try append(file: fileIndex, id: piece.id, length: piece.length, compressed: piece.compressed)
                    }
                    digests[fileIndex] = packed.digest
                }
                report(bytes)
            }
        }
    }

    /// Appends a chunk cut from file `file`: stored (and written) if new, else referenced again.
    /// `compressed` is nil only for a chunk that was already stored when it was cut.
    mutating func append(file: Int, id: SHA256Digest, length: Int, compressed: [UInt8]?) throws {
        references += 1
        if let existing = stored.index(of: id) {
            reference(file: file, chunk: existing)
            deduplicatedBytes += UInt64(length)
            return
        }
        guard let compressed else { preconditionFailure("a new chunk was not compressed") }
        let chunkIndex = stored.append(
            PackIndex.Chunk(
                id: id, offset: offset, compressedSize: UInt32(compressed.count), uncompressedSize: UInt32(length)))
        reference(file: file, chunk: chunkIndex)
        try writeBuffered(compressed)
    }

    mutating func reference(file: Int, chunk: Int) {
        precondition(referenceFiles.last.map { Int($0) <= file } ?? true, "chunks are appended in file order")
        referenceFiles.append(Int32(file))
        referenceChunks.append(Int32(chunk))
    }

    /// Starts the worker threads reading, hashing, cutting and compressing the batch's files (each
    /// file whole, by one thread; a file read ahead is only compressed, a sample of the dictionary
    /// is packed already), after the chunks of large files gathered before them, then appends what
    /// the threads had before; the batch's own chunks are appended by the next call (or
    /// ``flush(wait:)``), so that its threads run while the next batch is gathered. Empties the
    /// batch.
    mutating func process(_ small: inout SmallBatch, files: [SourceSelection.File], chunker: Chunker) throws {
        guard !small.files.isEmpty else { return }
        startChunks()  // chunks of large files gathered before these files go first
        let work = small.files
        let bytes = work.reduce(UInt64(0)) { $0 + files[$1].size }
        small = SmallBatch()
        let results = SmallBatch.Results(count: work.count)
        let next = AtomicCounter()
        let failures = FirstFailure()
        let level = self.level
        let root = self.root
        let dictionary = self.dictionary
        let ahead = self.ahead
        let samples = self.samples
        // As in `startChunks`: a snapshot of the chunks stored so far.
        let alreadyStored = stored
        let done = DispatchGroup()
        for _ in 0..<min(jobs, work.count) {
            workers.submit(countedBy: done) {
                let compressor = ZstdCompressor(level: level, dictionary: dictionary)
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: SmallBatch.fileLimit + 1, alignment: 16)
                defer { buffer.deallocate() }
                while !failures.hasFailure {
                    let i = next.increment()
                    guard i < work.count else { return }
                    if let packed = samples[work[i]] {
                        results.set(i, packed)
                        continue
                    }
                    do {
                        results.set(
                            i,
                            try SmallBatch.pack(
                                files[work[i]], root: root, buffer: buffer, chunker: chunker,
                                compressor: compressor, alreadyStored: alreadyStored, ahead: ahead?.take(work[i])))
                    } catch {
                        failures.record(i, error)
                    }
                }
            }
        }
        inFlight.append(.files(work: work, bytes: bytes, results: results, failures: failures, done: done))
        try appendInFlight(keeping: 1)
    }

    /// Appends `bytes` to the pack (handed to ``writes`` a few MiB at a time).
    mutating func writeBuffered(_ bytes: [UInt8]) throws {
        unwritten.append(bytes)
        unwrittenBytes += bytes.count
        offset += UInt64(bytes.count)
        if unwrittenBytes >= PackFileWrites.writeSize { try handOver() }
    }

    private mutating func handOver() throws {
        guard !unwritten.isEmpty else { return }
        try writes.write(unwritten)
        unwritten = []
        unwrittenBytes = 0
    }

    /// Writes every byte appended so far, and waits until it is.
    mutating func flushWrites() throws {
        try handOver()
        try writes.finish()
    }
}
