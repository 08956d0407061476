import BacklotBasics
import BacklotCrypto
import BacklotZstd
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Writes a pack's files into a directory (`backlot extract`), checking every chunk first.
///
/// Files are written into a hidden folder beside the target, flushed, and the folder is renamed
/// to the target only when everything is written and checked: a failed or interrupted extraction
/// leaves nothing behind. Paths come from a checked index (relative, no `..`), and files are
/// created with `O_EXCL | O_NOFOLLOW`, so nothing is written outside the target. Each chunk
/// decompresses into a buffer of its declared size, so no more memory or disk is used than the
/// index declares; the free space is checked before starting.
///
/// ```swift
/// let pack = try PackReader(path: "Tutorial.pack")
/// try PackExtractor(pack: pack).extract(to: "Tutorial")
/// ```
public struct PackExtractor: Sendable {
    public let pack: PackReader
    public let jobs: Int

    public init(pack: PackReader, jobs: Int = ProcessInfo.processInfo.activeProcessorCount) {
        self.pack = pack
        self.jobs = max(1, jobs)
    }

    /// Extracts into `directory`, which must not exist or be empty.
    /// - Throws: ``BacklotError/Code/alreadyExists`` for a non-empty target,
    ///   ``BacklotError/Code/corruptArchive`` naming the file, chunk and offset, ``BacklotError/Code/io``
    ///   (including too little free space).
    public func extract(to directory: String, progress: (@Sendable (UInt64, UInt64) -> Void)? = nil) throws {
        try StagedFolder.make(directory, needing: pack.index.installSize, of: "the pack") { staging in
            let work = units()
            try createTree(in: staging, units: work)
            try writeContents(in: staging, units: work, progress: progress)
        }
    }

    /// Creates every folder, once each (consecutive paths mostly share their folder, so the
    /// folders are looked at only when it changes), and the files that no single unit creates:
    /// empty files and files written in several units. Folders are named by their bytes (``BytePath``): two names that differ
    /// only by Unicode normalisation are two folders.
    private func createTree(in root: String, units: [Unit]) throws {
        var made = Set<BytePath.Key>()
        var previousFolder: Substring = ""
        for file in pack.index.files {
            let folder = file.path.utf8.lastIndex(of: BytePath.separator).map { file.path[..<$0] } ?? ""
            if !folder.isEmpty && !BytePath.same(folder, previousFolder) {
                for dir in BytePath.ancestors(of: file.path) where made.insert(BytePath.Key(dir)).inserted {
                    try FileSystem.makeDirectory(root + "/" + dir)
                }
            }
            previousFolder = folder
        }
        var split = [Bool](repeating: false, count: pack.index.files.count)
        for unit in units where !unit.isWhole { split[unit.file] = true }
        for (i, file) in pack.index.files.enumerated() where file.chunks.isEmpty || split[i] {
            let fd = try create(root + "/" + file.path, mode: file.mode)
            close(fd)
        }
    }

    /// The process's umask, read once: a file is created with its mode, and changed with
    /// `fchmod` only when the umask took bits away.
    private static let umaskBits: mode_t = {
        let mask = umask(0o022)
        umask(mask)
        return mask
    }()

    /// Creates a new file (never an existing one, never through a link) with exactly `mode`.
    private func create(_ full: String, mode: UInt32) throws -> Int32 {
        let fd = open(full, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode_t(mode))
        guard fd >= 0 else { throw SystemCall.error("create", path: full) }
        if mode_t(mode) & Self.umaskBits != 0 { fchmod(fd, mode_t(mode)) }
        return fd
    }

    /// One piece of work: whole small files (consecutive, each at most 1 MiB, at most 8 MiB
    /// together), or a run of one larger file's chunks (at most ~8 MiB), written at `fileOffset`.
    private struct Unit: Sendable {
        /// The first file.
        let file: Int
        /// How many whole files, from `file` on; 0 for a run of one file's chunks.
        let wholeFiles: Int
        /// For a run: the chunks and where they go in the file.
        let chunks: Slice<ChunkList>
        let fileOffset: UInt64

        var isWhole: Bool { wholeFiles > 0 }
    }

    private func units() -> [Unit] {
        var out: [Unit] = []
        let limit = 8 << 20
        let wholeFileLimit = 1 << 20
        let filesPerUnit = 256
        var groupStart = 0
        var groupFiles = 0
        var groupBytes = 0
        func closeGroup() {
            if groupFiles > 0 {
                out.append(Unit(file: groupStart, wholeFiles: groupFiles, chunks: ChunkList([])[...], fileOffset: 0))
            }
            groupFiles = 0
            groupBytes = 0
        }
        for (f, file) in pack.index.files.enumerated() where !file.chunks.isEmpty {
            if file.size <= UInt64(wholeFileLimit) {
                if groupFiles > 0
                    && (groupStart + groupFiles != f || groupBytes + Int(file.size) > limit
                        || groupFiles == filesPerUnit)
                {
                    closeGroup()
                }
                if groupFiles == 0 { groupStart = f }
                groupFiles += 1
                groupBytes += Int(file.size)
                continue
            }
            closeGroup()
            var start = 0
            var offset: UInt64 = 0
            var unitOffset: UInt64 = 0
            var bytes = 0
            for (i, ref) in file.chunks.enumerated() {
                let size = Int(pack.index.chunks[ref].uncompressedSize)
                if bytes > 0 && bytes + size > limit {
                    out.append(Unit(file: f, wholeFiles: 0, chunks: file.chunks[start..<i], fileOffset: unitOffset))
                    start = i
                    unitOffset = offset
                    bytes = 0
                }
                bytes += size
                offset += UInt64(size)
            }
            if bytes > 0 {
                out.append(Unit(file: f, wholeFiles: 0, chunks: file.chunks[start...], fileOffset: unitOffset))
            }
        }
        closeGroup()
        return out
    }

    /// Reads, checks and joins a file's chunks; the file's SHA-256 is checked before it is returned
    /// (for a file of one chunk it is that chunk's, already checked: no second pass).
    /// The frames of a group of whole files read with one read, when they lie close together
    /// (as a group's chunks do, stored in the order of first use): at most 8 MiB, and at most
    /// twice the bytes the group needs, else nil (each chunk is read on its own).
    private struct Frames {
        let start: UInt64
        let bytes: [UInt8]

        init?(_ files: Slice<PackIndex.FileTable>, pack: PackReader) throws {
            var low = UInt64.max
            var high: UInt64 = 0
            var needed: UInt64 = 0
            for file in files {
                for ref in file.chunks {
                    let chunk = pack.index.chunks[ref]
                    low = min(low, chunk.offset)
                    high = max(high, chunk.offset + UInt64(chunk.compressedSize))
                    needed += UInt64(chunk.compressedSize)
                }
            }
            guard low < high, high - low <= 8 << 20, high - low <= 2 * needed else { return nil }
            start = low
            bytes = try pack.readFrames(low..<high)
        }
    }

    private func contents(
        of file: PackIndex.File, from frames: Frames?, using decompressor: ZstdDecompressor
    ) throws -> [UInt8] {
        func chunk(_ ref: Int) throws -> [UInt8] {
            do {
                guard let frames else { return try pack.readChunk(ref, using: decompressor) }
                let c = pack.index.chunks[ref]
                let at = Int(c.offset - frames.start)
                return try frames.bytes.withUnsafeBytes { b in
                    try PackReader.decode(
                        UnsafeRawBufferPointer(rebasing: b[at..<at + Int(c.compressedSize)]), chunk: c, chunkIndex: ref,
                        dictionary: pack.index.dictionary, using: decompressor, source: pack.path)
                }
            } catch let e as BacklotError {
                throw BacklotError(
                    e.code, e.message, context: "file \"\(file.path)\": \(e.context ?? pack.path)", hint: e.hint)
            }
        }
        if file.chunks.count == 1 {
            let plain = try chunk(file.chunks[0])
            try file.check(pack.index.chunks[file.chunks[0]].id, source: pack.path)
            return plain
        }
        var hasher = SHA256()
        var joined: [UInt8] = []
        joined.reserveCapacity(Int(file.size))
        for ref in file.chunks {
            let plain = try chunk(ref)
            hasher.update(plain)
            joined += plain
        }
        try file.check(hasher.finalize(), source: pack.path)
        return joined
    }

    private func writeContents(
        in root: String, units work: [Unit], progress: (@Sendable (UInt64, UInt64) -> Void)?
    ) throws {
        let pack = self.pack
        let total = pack.index.installSize
        let next = AtomicCounter()
        let done = AtomicCounter()
        let failures = FirstFailure()
        // A large file written in several units is read back and hashed by the thread that
        // writes its last piece. Twice as many threads as cores keep the cores busy while some
        // threads wait for the disk. Nothing is flushed here: the caller flushes the file system once
        // (a large file's runs are started on their way to disk as they are written).
        let remaining = Mutex<[Int]>(
            work.reduce(into: [Int](repeating: 0, count: pack.index.files.count)) {
                if !$1.isWhole { $0[$1.file] += 1 }
            })
        DispatchQueueRunner.run(jobs: jobs * 2) {
            let decompressor = ZstdDecompressor()
            while !failures.hasFailure {
                let u = next.increment()
                guard u < work.count else { return }
                let unit = work[u]
                do {
                    if unit.isWhole {
                        let group = unit.file..<(unit.file + unit.wholeFiles)
                        let frames = try Frames(pack.index.files[group], pack: pack)
                        for f in group {
                            let file = pack.index.files[f]
                            let plain = try self.contents(of: file, from: frames, using: decompressor)
                            let full = root + "/" + file.path
                            let out = FileDescriptor(rawValue: try self.create(full, mode: file.mode), path: full)
                            defer { out.close() }
                            try out.write(plain)
                            progress?(UInt64(done.add(plain.count)), total)
                        }
                        continue
                    }
                    let file = pack.index.files[unit.file]
                    let full = root + "/" + file.path
                    let fd = open(full, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
                    guard fd >= 0 else { throw SystemCall.error("open", path: full) }
                    let out = FileDescriptor(rawValue: fd, path: full)
                    defer { out.close() }
                    var offset = unit.fileOffset
                    for ref in unit.chunks {
                        let plain: [UInt8]
                        do {
                            plain = try pack.readChunk(ref, using: decompressor)
                        } catch let e as BacklotError {
                            throw BacklotError(
                                e.code, e.message, context: "file \"\(file.path)\": \(e.context ?? pack.path)",
                                hint: e.hint)
                        }
                        try plain.withUnsafeBytes { try out.write($0, at: offset) }
                        offset += UInt64(plain.count)
                        progress?(UInt64(done.add(plain.count)), total)
                    }
                    // The disk starts on this run while the others are written, so that the
                    // one flush before the rename waits for the last runs rather than for all.
                    out.startWriteback()
                    let last = remaining.withLock { r -> Bool in
                        r[unit.file] -= 1
                        return r[unit.file] == 0
                    }
                    if last { try file.check(try SHA256.hash(descriptor: out), source: pack.path) }
                } catch {
                    failures.record(u, error)
                }
            }
        }
        if let error = failures.first { throw error }
        // Empty files have no chunks, hence no unit: their digest is checked here.
        for file in pack.index.files where file.chunks.isEmpty {
            try file.check(SHA256.hash([]), source: pack.path)
        }
    }
}
