import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotZstd
import Dispatch
import Synchronization

/// The complete check of an uploaded pack, bounded for a server that shares its processing
/// between apps:
///
/// - the header and index are checked as ``PackReader`` checks them, and errors name "the
///   archive", never a server path;
/// - the install size (the sum of the file sizes, which is what hashing the files costs) must be
///   at most the server's limit, checked before any chunk is read;
/// - each distinct chunk is read, decompressed and checked against its SHA-256 once by each
///   thread that needs it (the files are checked on several threads, in runs of neighbours),
///   however many times files refer to it; a chunk used more than once is kept in memory while
///   the thread's share of the cache has room (else decompressed again, without hashing it again);
/// - every file's SHA-256 is computed by streaming its verified chunks (files with the same chunk
///   list are hashed once);
/// - a cancellation flag is looked at between chunks, so deleting a version stops its processing.
struct UploadedPackCheck {
    /// What the check found.
    struct Outcome {
        let header: PackHeader
        let index: PackIndex
        let installSize: UInt64
        /// Chunk decompressions done (each distinct chunk once a thread that needs it, plus
        /// re-decompressions of evicted ones).
        let decompressions: Int
        /// Bytes fed to SHA-256 for the files.
        let hashedFileBytes: UInt64
    }

    /// Memory for decompressed chunks used more than once.
    static let cacheBytes = 256 << 20

    /// A name for the archive in errors (what API clients see).
    static let source = "the archive"

    /// Checks the archive `fd` reads (a file, or an object read by ranges), on `threads` threads
    /// when `open` opens the archive again for each thread past the caller's.
    ///
    /// The files are checked in runs of neighbours (about 8 MiB, or 4,096 files, each), handed
    /// out in order; a thread checks a run's files in order and stops at a failing one. A run is
    /// not begun, nor a file, past a file that failed, so the failure reported is the first file
    /// in index order that fails, whatever the thread count. Each thread keeps its own chunks
    /// (a chunk two threads need is checked by both) and a share of ``cacheBytes``.
    static func run(
        reader fd: any ArchiveReader, open: (@Sendable () throws -> any ArchiveReader)? = nil, threads: Int = 1,
        maximumInstallSize: UInt64, isCancelled: @escaping @Sendable () -> Bool,
        runsOf runLimit: (bytes: UInt64, files: Int) = (8 << 20, 4096)
    ) throws -> Outcome {
        let (header, index, installSize) = try checkedIndex(fd, maximumInstallSize: maximumInstallSize)
        let runs = fileRuns(index, limit: runLimit)
        let threads = open == nil ? 1 : max(1, min(threads, runs.count))
        var uses = [Int](repeating: 0, count: index.chunks.count)
        for file in index.files { for ref in file.chunks { uses[ref] += 1 } }
        let shared = Shared(index: index, uses: uses, runs: runs, cacheBytes: cacheBytes / threads)
        let done = DispatchGroup()
        let pool = threads > 1 ? BlockingPool(threads: threads - 1, name: "backlot-check") : nil
        defer { pool?.stop() }
        if let open, let pool {
            for _ in 1..<threads {
                _ = pool.submit(countedBy: done) {
                    // A thread that cannot open the archive again leaves its share to the others
                    // (the caller's thread, which has it open, checks every run left).
                    guard let reader = try? open() else { return }
                    defer { reader.close() }
                    shared.work(reader: reader, isCancelled: isCancelled)
                }
            }
        }
        shared.work(reader: fd, isCancelled: isCancelled)
        done.wait()
        if let error = shared.firstFailure { throw error }
        return Outcome(
            header: header, index: index, installSize: installSize, decompressions: shared.decompressions,
            hashedFileBytes: shared.hashed)
    }

    /// The files' indexes in runs of neighbours whose new chunks take about `limit.bytes` of the
    /// archive, or of `limit.files` files, each. Chunks lie in the order files first use them, so a
    /// run reads one stretch of the archive about a reader's window long (``S3ArchiveReader`` reads
    /// 8 MiB at a time): threads a few runs apart do not fetch each other's windows.
    static func fileRuns(_ index: PackIndex, limit: (bytes: UInt64, files: Int)) -> [Range<Int>] {
        var runs: [Range<Int>] = []
        var start = 0
        var bytes: UInt64 = 0
        var seen = [Bool](repeating: false, count: index.chunks.count)
        for (i, file) in index.files.enumerated() {
            for ref in file.chunks where !seen[ref] {
                seen[ref] = true
                bytes += UInt64(index.chunks[ref].compressedSize)
            }
            if bytes >= limit.bytes || i + 1 - start >= limit.files {
                runs.append(start..<i + 1)
                start = i + 1
                bytes = 0
            }
        }
        if start < index.files.count { runs.append(start..<index.files.count) }
        return runs
    }

    /// What the threads of one check share: the runs handed out, the first failure, the counts.
    final class Shared: Sendable {
        let index: PackIndex
        let uses: [Int]
        let runs: [Range<Int>]
        let cacheBytes: Int
        private let next = Atomic<Int>(0)
        /// The index of the first file that failed (`Int.max` while none has), and its error.
        private let failure = Mutex<(file: Int, error: (any Error)?)>((Int.max, nil))
        private let firstFailed = Atomic<Int>(Int.max)
        private let counts = Mutex<(decompressions: Int, hashed: UInt64)>((0, 0))

        init(index: PackIndex, uses: [Int], runs: [Range<Int>], cacheBytes: Int) {
            self.index = index
            self.uses = uses
            self.runs = runs
            self.cacheBytes = cacheBytes
        }

        var firstFailure: (any Error)? { failure.withLock { $0.error } }
        var decompressions: Int { counts.withLock { $0.decompressions } }
        var hashed: UInt64 { counts.withLock { $0.hashed } }

        func failed(at file: Int, _ error: any Error) {
            failure.withLock { f in
                if file < f.file { f = (file, error) }
                firstFailed.store(f.file, ordering: .relaxed)
            }
        }

        /// Checks runs until none is left, or none before a failure.
        func work(reader: any ArchiveReader, isCancelled: () -> Bool) {
            var chunks = CheckedChunks(fd: reader, index: index, uses: uses, cacheBytes: cacheBytes)
            var digests: [ChunkList: SHA256Digest] = [:]
            var hashed: UInt64 = 0
            defer { counts.withLock { $0 = ($0.decompressions + chunks.decompressions, $0.hashed + hashed) } }
            while true {
                let r = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard r < runs.count, runs[r].lowerBound < firstFailed.load(ordering: .relaxed) else { return }
                for i in runs[r] {
                    guard i < firstFailed.load(ordering: .relaxed) else { return }
                    do {
                        hashed += try check(
                            index.files[i], chunks: &chunks, digests: &digests, isCancelled: isCancelled)
                    } catch {
                        failed(at: i, error)
                        return
                    }
                }
            }
        }

        /// Checks one file; the bytes hashed for it.
        private func check(
            _ file: PackIndex.File, chunks: inout CheckedChunks, digests: inout [ChunkList: SHA256Digest],
            isCancelled: () -> Bool
        ) throws -> UInt64 {
            func cancelled() throws {
                if isCancelled() {
                    throw BacklotError(.cancelled, "processing was cancelled: the version was deleted", context: source)
                }
            }
            try cancelled()
            if let known = digests[file.chunks] {
                guard known == file.digest else { throw fileMismatch(file, known) }
                return 0
            }
            // A file of one chunk is that chunk's bytes, which `bytes(of:)` checks against the
            // chunk's ID: the file's SHA-256 must be that ID, with no second pass over them.
            if file.chunks.count == 1 {
                let ref = file.chunks[0]
                let count = try inFile(file) { try chunks.bytes(of: ref).count }
                guard index.chunks[ref].id == file.digest else { throw fileMismatch(file, index.chunks[ref].id) }
                return UInt64(count)
            }
            var hasher = SHA256()
            var hashed: UInt64 = 0
            try inFile(file) {
                for ref in file.chunks {
                    try cancelled()
                    let plain = try chunks.bytes(of: ref)
                    hasher.update(plain)
                    hashed += UInt64(plain.count)
                }
            }
            let computed = hasher.finalize()
            guard computed == file.digest else { throw fileMismatch(file, computed) }
            digests[file.chunks] = computed
            return hashed
        }
    }

    /// The header and the index `fd` holds, the index checked against the header's SHA-256, its
    /// variants (each device's must install as one tree) and the install size against the limit,
    /// before any chunk is read.
    static func checkedIndex(
        _ fd: any ArchiveReader, maximumInstallSize: UInt64
    ) throws -> (PackHeader, PackIndex, installSize: UInt64) {
        let (header, index) = try PackReader.checkedIndex(
            size: fd.size, source: source, hint: "the pack is damaged: package it again"
        ) { try fd.read(count: $0, at: $1) }
        // Every device's variant must install as one tree (docs/format.md §3.2): a crafted pack
        // whose variants clash is refused here, not by every device that tries it.
        if index.metadata.variants != nil { _ = try index.installs(source: source) }
        let installSize = try CheckedInteger.sum(index.files.map(\.size), "the install size", context: source)
        guard installSize <= maximumInstallSize else {
            throw BacklotError(
                .invalidInput,
                "the pack's files add up to \(installSize) bytes, more than this server's install-size limit of \(maximumInstallSize) bytes",
                context: source,
                hint: "the server's operator can raise the limit: backlot serve --max-install-size BYTES")
        }
        return (header, index, installSize)
    }

    /// What `body` throws while it reads `file`'s chunks, naming the file (a cancellation as it is).
    static func inFile<T>(_ file: PackIndex.File, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as BacklotError where e.code != .cancelled {
            throw BacklotError(
                e.code, e.message, context: "file \"\(file.path)\": \(e.context ?? source)", hint: e.hint)
        }
    }

    /// The chunks of one archive, each read, decompressed and checked against its SHA-256 once;
    /// those used by more than one file kept in memory while ``cacheBytes`` has room (else
    /// decompressed again, without hashing them again).
    struct CheckedChunks {
        let fd: any ArchiveReader
        let index: PackIndex
        /// How many files use each chunk.
        let uses: [Int]
        /// The bytes of chunks used more than once kept at most.
        let cacheBytes: Int
        var verified: [Bool]
        var cache: [Int: [UInt8]] = [:]
        var cached = 0
        /// Decompressions done (each distinct chunk once, plus those of evicted ones).
        var decompressions = 0
        let decompressor = ZstdDecompressor()

        init(fd: any ArchiveReader, index: PackIndex, uses: [Int], cacheBytes: Int) {
            self.fd = fd
            self.index = index
            self.uses = uses
            self.cacheBytes = cacheBytes
            verified = [Bool](repeating: false, count: index.chunks.count)
        }

        /// Chunk `ref`'s bytes, checked.
        mutating func bytes(of ref: Int) throws -> [UInt8] {
            if let plain = cache[ref] { return plain }
            let chunk = index.chunks[ref]
            let compressed = try fd.read(count: Int(chunk.compressedSize), at: chunk.offset)
            decompressions += 1
            let plain: [UInt8]
            if verified[ref] {
                // Checked once already: the same bytes decompress to the same content.
                plain = try compressed.withUnsafeBytes {
                    try decompressor.decompress(
                        $0, expectedSize: Int(chunk.uncompressedSize), dictionary: index.dictionary)
                }
            } else {
                plain = try PackReader.decode(
                    compressed, chunk: chunk, chunkIndex: ref, dictionary: index.dictionary, using: decompressor,
                    source: UploadedPackCheck.source)
                verified[ref] = true
            }
            if uses[ref] > 1, cached + plain.count <= cacheBytes {
                cache[ref] = plain
                cached += plain.count
            }
            return plain
        }
    }

    static func fileMismatch(_ file: PackIndex.File, _ computed: SHA256Digest) -> BacklotError {
        BacklotError(
            .corruptArchive, "the file's SHA-256 is \(computed.short)…, but the index says \(file.digest.short)…",
            context: "\(source): file \"\(file.path)\"", hint: "the pack is damaged or crafted: package it again")
    }
}
