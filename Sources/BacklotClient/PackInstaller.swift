import BacklotBasics
import BacklotCatalog
import BacklotCrypto
import BacklotFormat
import BacklotHTTPClient
import BacklotZstd
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Installs one release of a pack into a container, downloading only what it lacks.
///
/// 1. Reads the archive's header and index by Range and checks them against the catalog
///    (mix-and-match is refused).
/// 2. Hard-links files that did not change from the installed release; takes chunks the installed
///    release already has from its files, re-hashing each before reuse.
/// 3. Downloads the remaining chunks as Range requests over runs of adjacent chunks (small gaps
///    merged), several at once; every chunk is decompressed into a buffer of its declared size and
///    checked against its SHA-256 before it is written; progress is recorded in the container's
///    database, so after a crash only chunks that were in flight are fetched again.
/// 4. Checks every file's SHA-256, flushes, makes the files read-only, and switches to the new
///    release with one rename: readers see the old release until the new one is complete.
struct PackInstaller: Sendable {
    let container: ClientContainer
    let http: HTTPClient
    var connections = 4
    var maximumRangeBytes: UInt64 = 2 << 20
    var mergeGap: UInt64 = 64 << 10
    /// Attempts after the first for one Range request.
    var retries = 4

    struct Outcome: Sendable {
        /// Bytes fetched from the network (header, index and chunks).
        let downloadedBytes: UInt64
        let reusedChunks: Int
        let downloadedChunks: Int
        let linkedFiles: Int
        /// Of the bytes downloaded, those read from a delta file (its prefix and frames), and the
        /// chunks rebuilt from it (each checked against its ID; ``downloadedChunks`` counts the others).
        var deltaBytes: UInt64 = 0
        var deltaChunks = 0
    }

    /// - Parameter repairing: rebuild the release even if it is the installed one (damaged files are
    ///   assembled again from intact local chunks and downloads).
    func install(
        id: String, release: Catalog.Release, archiveURL: URL, repairing: Bool = false,
        progress: (@Sendable (UInt64, UInt64) -> Void)? = nil,
        isCancelled: @escaping @Sendable () -> Bool = { false }
    ) throws -> Outcome {
        let digest = release.indexSHA256.hex
        let previous = try container.installed(id)
        if previous?.digest == digest && !repairing {
            return Outcome(downloadedBytes: 0, reusedChunks: 0, downloadedChunks: 0, linkedFiles: 0)
        }
        let url = archiveURL.absoluteString
        var downloaded: UInt64 = 0

        // 1. A delta from the installed release, when the catalog offers one: its prefix, and the
        //    index rebuilt from it (checked as the archive's would be). Any failure: no delta.
        let delta =
            repairing ? nil : previous.flatMap { deltaPlan(release: release, previous: $0, archiveURL: archiveURL) }
        var deltaBytes = UInt64(delta?.prefixBytes ?? 0)
        downloaded += deltaBytes

        // 1. Header and index, checked against the catalog.
        let headBytes: [UInt8]
        if let rebuilt = delta?.index, let version = PackIndex.formatVersion(ofIndex: rebuilt),
            PackHeader.formatVersions.contains(version)
        {
            headBytes =
                PackHeader(
                    formatVersion: version, indexOffset: release.indexOffset, indexLength: release.indexLength,
                    indexDigest: release.indexSHA256
                ).encoded
        } else {
            headBytes = try rangeWithRetries(url, 0, UInt64(PackHeader.size) - 1)
            downloaded += UInt64(headBytes.count)
        }
        let header = try PackHeader.decode(headBytes, fileSize: release.archiveSize, source: url)
        guard header.indexDigest == release.indexSHA256, header.indexOffset == release.indexOffset,
            header.indexLength == release.indexLength
        else {
            throw BacklotError(
                .untrusted,
                "the archive's header does not match the catalog (index \(header.indexDigest.short)… at \(header.indexOffset))",
                context: url, hint: "the server mixes archives and catalogs; try again later")
        }
        var indexBytes: [UInt8]
        if let rebuilt = delta?.index {
            indexBytes = rebuilt
        } else {
            indexBytes = try rangeWithRetries(url, header.indexOffset, header.indexOffset + header.indexLength - 1)
            downloaded += UInt64(indexBytes.count)
        }
        guard SHA256.hash(indexBytes) == release.indexSHA256 else {
            throw BacklotError(
                .untrusted, "the archive's index does not have the SHA-256 the catalog names", context: url)
        }
        let index = try PackIndex.decode(indexBytes, header: header, source: url)
        // What the container keeps (the header and the index, for updates and repairs), made now
        // while little else is in memory, and the index's bytes not kept twice (200,000 files:
        // a 12 MB copy at the end, when the most is in memory, was the install's peak).
        let stored = headBytes + indexBytes
        indexBytes = []
        guard index.metadata.assetPackID.rawValue == id else {
            throw BacklotError(
                .untrusted, "the archive is the pack \(index.metadata.assetPackID), not \(id)", context: url)
        }
        guard index.installSize == release.installSize else {
            throw BacklotError(
                .untrusted,
                "the catalog says \(id) installs \(release.installSize) bytes, but its index holds \(index.installSize)",
                context: url,
                hint: "the catalog and the archive disagree: the publisher must fix the release")
        }

        // 2. What the installed release offers.
        let folder = container.releaseFolder(id, digest: digest)
        let partial = folder + ".partial"
        try FileManager.default.createDirectory(atPath: partial, withIntermediateDirectories: true)
        // What an earlier attempt left is kept only where it cannot mislead this one: chunks found
        // there are re-hashed before use, but links, special files and hard links (a file shared
        // with a release, which writing would damage) are removed, and linked files are linked again.
        try Self.sanitize(partial)
        // Paths are byte strings (BytePath): an NFC and an NFD name are two files, never one.
        var oldFiles: [BytePath.Key: PackIndex.File] = [:]
        var localChunks: [SHA256Digest: (path: String, offset: UInt64, size: Int)] = [:]
        if let previous, let old = Self.decodeStored(previous.indexBytes) {
            let oldFolder = container.releaseFolder(id, digest: previous.digest)
            for file in old.index.files {
                oldFiles[BytePath.Key(file.path)] = file
                var offset: UInt64 = 0
                for c in file.chunks {
                    let chunk = old.index.chunks[c]
                    if localChunks[chunk.id] == nil {
                        localChunks[chunk.id] = (oldFolder + "/" + file.path, offset, Int(chunk.uncompressedSize))
                    }
                    offset += UInt64(chunk.uncompressedSize)
                }
            }
        }
        var linked = Set<BytePath.Key>()
        var needed: UInt64 = 0
        var madeFolders = Set<BytePath.Key>()
        for file in index.files {
            let target = partial + "/" + file.path
            for dir in BytePath.ancestors(of: file.path) where madeFolders.insert(BytePath.Key(dir)).inserted {
                try FileSystem.makeDirectory(partial + "/" + dir)
            }
            if let old = oldFiles[BytePath.Key(file.path)], old.digest == file.digest, let previous {
                let source = container.releaseFolder(id, digest: previous.digest) + "/" + file.path
                // An unchanged file is linked only if it is still intact (installed files may have
                // been altered, or replaced by a link), and what is linked is that very file.
                if Self.linkVerified(source, to: target, digest: file.digest) {
                    linked.insert(BytePath.Key(file.path))
                    continue
                }
            }
            needed += file.size
            // Files with content are created by the first write of one of their chunks
            // (OpenFiles), so a file costs one open, not two; an empty file has no chunk, and
            // its digest must be that of no bytes.
            guard file.chunks.isEmpty else { continue }
            try file.check(SHA256.hash([]), source: url)
            let fd = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
            guard fd >= 0 else { throw SystemCall.error("create", path: target) }
            close(fd)
        }
        if let free = FileSystem.availableBytes(at: partial), free < needed {
            throw BacklotError(
                .io, "installing \(id) needs \(needed) bytes but only \(free) are free", context: container.path,
                hint: "free some disk space")
        }

        // Where each chunk goes: (file number, offset), grouped by chunk, for the files not linked.
        let targets = ChunkPlacements(index: index) { !linked.contains(BytePath.Key(index.files[$0].path)) }
        let wanted = (0..<targets.chunkCount).filter { !targets[$0].isEmpty }
        let done = AtomicBytes()
        // Each file is checked, made read-only and closed by the thread that writes its last chunk.
        let files = OpenFiles(
            folder: partial, files: index.files, placements: targets.perFile, chunks: index.chunks, source: url)
        defer { files.closeAll() }

        // 3a. Chunks finished before a crash, and chunks the installed release has: checked, then used.
        let finished = try container.doneChunks(digest)
        var missing: [Int] = []
        var viaDelta: [(chunk: Int, entry: PackDelta.Entry)] = []
        var reused = 0
        var recorded: [Int] = []
        for c in wanted {
            let chunk = index.chunks[c]
            let places = targets[c]
            if finished.contains(c),
                let bytes = try? Self.read(
                    files.path(of: places.first!.file), places.first!.offset, Int(chunk.uncompressedSize)),
                SHA256.hash(bytes) == chunk.id
            {
                for p in places { try files.account(p, writing: p == places.first! ? nil : bytes) }
                done.add(UInt64(bytes.count))
                continue
            }
            if let local = localChunks[chunk.id], let bytes = try? Self.read(local.path, local.offset, local.size),
                SHA256.hash(bytes) == chunk.id
            {
                for p in places { try files.account(p, writing: bytes) }
                reused += 1
                recorded.append(c)
                done.add(UInt64(bytes.count))
                continue
            }
            if let entry = delta?.entries[chunk.id], entry.targetSize == chunk.uncompressedSize,
                entry.bases.allSatisfy({ localChunks[$0] != nil })
            {
                viaDelta.append((c, entry))
                continue
            }
            missing.append(c)
        }
        try container.recordChunks(digest, recorded)

        // 3a'. Chunks rebuilt from the delta: frames fetched by Range in runs, each applied to the
        //      base chunks read from the installed release (re-hashed first) and checked against
        //      its ID; whatever fails (a 404, a changed frame, a base no longer intact) is fetched whole.
        var deltaChunks = 0
        if let delta, !viaDelta.isEmpty {
            let result = try applyDelta(
                delta, viaDelta, localChunks: localChunks, placements: targets, files: files, digest: digest,
                isCancelled: isCancelled)
            deltaBytes += result.bytes
            downloaded += result.bytes
            deltaChunks = viaDelta.count - result.fallback.count
            done.add(result.plainBytes)
            missing = (missing + result.fallback).sorted()
        }

        // 3b. Runs of missing chunks, fetched in parallel. Progress counts the bytes downloaded
        // against the bytes there are to download (not the installed size), and ends at 100 %.
        let runs = plan(missing, index: index)
        let downloadTotal = runs.reduce(UInt64(0)) { sum, run in
            let first = index.chunks[run.first!]
            let last = index.chunks[run.last!]
            return sum + (last.offset + UInt64(last.compressedSize) - first.offset)
        }
        progress?(0, downloadTotal)
        let next = Mutex(0)
        let failure = Mutex<(any Error)?>(nil)
        let fetched = AtomicBytes()
        let container = self.container
        let placements = targets
        // Progress is recorded every 8 MiB of chunks, or a quarter of a second after the last
        // record, rather than every run: each record is a flushed transaction that the other
        // download threads wait behind, and a slow download still shows (and keeps) its progress
        // as it goes. After a crash only the chunks not yet recorded are fetched again (and
        // recorded ones are re-hashed anyway).
        let unrecorded = Mutex<(chunks: [Int], bytes: UInt64, since: ContinuousClock.Instant)>(([], 0, .now))
        DispatchQueue.concurrentPerform(iterations: max(1, min(connections, runs.count))) { _ in
            let decompressor = ZstdDecompressor()
            while true {
                if failure.withLock({ $0 != nil }) { return }
                if isCancelled() {
                    failure.withLock { $0 = $0 ?? BacklotError(.cancelled, "the download of \(id) was cancelled") }
                    return
                }
                let i = next.withLock { n -> Int in
                    defer { n += 1 }
                    return n
                }
                guard i < runs.count else { return }
                let run = runs[i]
                do {
                    let first = index.chunks[run.first!]
                    let last = index.chunks[run.last!]
                    let body = try self.rangeWithRetries(
                        url, first.offset, last.offset + UInt64(last.compressedSize) - 1)
                    progress?(fetched.add(UInt64(body.count)), downloadTotal)
                    for c in run {
                        let chunk = index.chunks[c]
                        let start = Int(chunk.offset - first.offset)
                        let plain = try PackReader.decode(
                            Array(body[start..<start + Int(chunk.compressedSize)]), chunk: chunk, chunkIndex: c,
                            dictionary: index.dictionary, using: decompressor, source: url)
                        for p in placements[c] { try files.account(p, writing: plain) }
                        done.add(UInt64(plain.count))
                    }
                    let due = unrecorded.withLock { u -> [Int]? in
                        u.chunks += run
                        u.bytes += UInt64(body.count)
                        guard u.bytes >= 8 << 20 || ContinuousClock.now - u.since >= .milliseconds(250) else {
                            return nil
                        }
                        defer { u = ([], 0, .now) }
                        return u.chunks
                    }
                    if let due { try container.recordChunks(digest, due) }
                } catch {
                    failure.withLock { $0 = $0 ?? error }
                }
            }
        }
        let rest = unrecorded.withLock { u -> [Int] in
            defer { u = ([], 0, .now) }
            return u.chunks
        }
        if let error = failure.withLock({ $0 }) {
            try? container.recordChunks(digest, rest)  // what was written is kept for the next attempt
            throw error
        }
        try container.recordChunks(digest, rest)
        // Ends at 100 % even with nothing left to fetch whole (every chunk came from a delta): a
        // progress of 0 of 0 never finishes, and `fetch` waits for its bar to.
        progress?(max(1, downloadTotal), max(1, downloadTotal))

        // 4. Every byte written came from a chunk that had its SHA-256 (and the index that lists the
        //    chunks of each file had the catalog's), and every file was checked and made
        //    read-only when its last chunk was written (OpenFiles): make the linked and empty
        //    files read-only too, flush the file system once, switch.
        for file in index.files where file.chunks.isEmpty || linked.contains(BytePath.Key(file.path)) {
            try FileSystem.setMode(partial + "/" + file.path, OpenFiles.installedMode(file.mode))
        }
        try files.syncAll(holding: partial)
        if FileSystem.exists(folder) { Self.removeRelease(folder) }
        try SystemCall.retrying("rename", path: folder) { rename(partial, folder) }
        FileSystem.syncDirectory(container.packFolder(id))
        try container.markInstalled(
            id: id, version: release.version, digest: digest,
            downloadSize: try CheckedInteger.convert(
                release.archiveSize, to: Int.self, "the archive size", context: url),
            metadata: index.metadata.json.serialized(), indexBytes: stored)
        if let previous, previous.digest != digest {
            Self.removeRelease(container.releaseFolder(id, digest: previous.digest))
        }
        // Attempts at other releases that never finished are of no further use.
        for name in (try? FileSystem.entryNames(container.packFolder(id))) ?? [] {
            let entry = String(decoding: name, as: UTF8.self)
            if entry.hasSuffix(".partial") { Self.removeRelease(container.packFolder(id) + "/" + entry) }
        }
        try? container.recordDeltaUse(id, digest: digest, bytes: deltaBytes, chunks: deltaChunks)
        return Outcome(
            downloadedBytes: downloaded + fetched.value, reusedChunks: reused, downloadedChunks: missing.count,
            linkedFiles: linked.count, deltaBytes: deltaBytes, deltaChunks: deltaChunks)
    }

    /// Groups sorted missing chunks into runs of adjacent chunks (gaps up to `mergeGap` are fetched
    /// and thrown away), each at most `maximumRangeBytes`.
    func plan(_ missing: [Int], index: PackIndex) -> [[Int]] {
        var runs: [[Int]] = []
        var current: [Int] = []
        var start: UInt64 = 0
        var end: UInt64 = 0
        for c in missing.sorted(by: { index.chunks[$0].offset < index.chunks[$1].offset }) {
            let chunk = index.chunks[c]
            if !current.isEmpty, chunk.offset <= end + mergeGap,
                chunk.offset + UInt64(chunk.compressedSize) - start <= maximumRangeBytes
            {
                current.append(c)
            } else {
                if !current.isEmpty { runs.append(current) }
                current = [c]
                start = chunk.offset
            }
            end = chunk.offset + UInt64(chunk.compressedSize)
        }
        if !current.isEmpty { runs.append(current) }
        return runs
    }

    /// One Range request; the answer must be 206 with exactly the bytes asked for.
    func range(_ url: String, _ first: UInt64, _ last: UInt64) throws -> [UInt8] {
        let r = try http.send(
            "GET", url, headers: ["Range": "bytes=\(first)-\(last)"], expectedBodySize: Int(last - first + 1))
        guard r.status == 206 else {
            if r.status == 503 || r.status == 429,
                let after = r.headers["retry-after"].flatMap({ CheckedInteger.parse($0, as: Int.self) }), after >= 0
            {
                throw RetryLater(seconds: min(after, 60), status: r.status, url: url)
            }
            throw BacklotError(
                .io,
                r.status == 200
                    ? "the server ignored the Range request (200 instead of 206)" : "the archive answered \(r.status)",
                context: url, hint: "the server must support HTTP Range requests")
        }
        guard !r.exceededExpectedSize else {
            throw BacklotError(
                .io, "the server sent more than the \(last - first + 1) bytes asked for; the transfer was stopped",
                context: url)
        }
        guard UInt64(r.body.count) == last - first + 1 else {
            throw BacklotError(
                .io, "the server sent \(r.body.count) bytes for a range of \(last - first + 1)", context: url)
        }
        return r.body
    }

    /// ``range(_:_:_:)`` with retries (exponential backoff with jitter) on transport failures.
    func rangeWithRetries(_ url: String, _ first: UInt64, _ last: UInt64) throws -> [UInt8] {
        var attempt = 0
        while true {
            do { return try range(url, first, last) } catch let e as RetryLater {
                guard attempt < retries else {
                    throw BacklotError(
                        .io, "the server kept answering \(e.status) (Retry-After)", context: url,
                        hint: "try again later")
                }
                attempt += 1
                usleep(useconds_t(e.seconds) * 1_000_000)
            } catch let e as BacklotError where e.code == .io && attempt < retries {
                attempt += 1
                usleep(useconds_t(Double(100_000 << attempt) * Double.random(in: 0.5...1.5)))
            }
        }
    }

    /// Removes from an earlier attempt's folder everything but folders and regular files with a
    /// single name (no links, no special files, no hard links shared with another release).
    static func sanitize(_ folder: String) throws {
        for name in try FileSystem.entryNames(folder) {
            let path = folder + "/" + String(decoding: name, as: UTF8.self)
            guard let st = try FileSystem.linkStatus(path) else { continue }
            switch st.kind {
            case .directory:
                chmodIfNeeded(path, st)
                try sanitize(path)
            case .regular where st.linkCount == 1:
                // A file finished (and made read-only) before the crash is written again only if
                // its chunks were not all recorded: it must be writable for that.
                if st.mode & 0o200 == 0 { chmod(path, 0o644) }
            default:
                if unlink(path) != 0 && errno != ENOENT { throw SystemCall.error("remove", path: path) }
            }
        }
    }

    private static func chmodIfNeeded(_ path: String, _ st: FileSystem.Status) {
        if st.mode & 0o700 != 0o700 { chmod(path, 0o755) }
    }

    /// Hard-links `source` (a regular file, never through a link) to `target` when its SHA-256 is
    /// `digest`, replacing whatever `target` was; true when `target` is then that same file.
    static func linkVerified(_ source: String, to target: String, digest: SHA256Digest) -> Bool {
        let fd = open(source, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return false }
        let descriptor = FileDescriptor(rawValue: fd, path: source)
        defer { descriptor.close() }
        guard let st = try? FileSystem.status(of: descriptor), st.kind == .regular,
            (try? SHA256.hash(descriptor: descriptor)) == digest
        else { return false }
        if let existing = try? FileSystem.linkStatus(target) {
            if existing.kind == .regular, existing.isSameFile(as: st) { return true }
            guard unlink(target) == 0 else { return false }
        }
        guard link(source, target) == 0, let made = try? FileSystem.linkStatus(target) else { return false }
        return made.kind == .regular && made.isSameFile(as: st)
    }

    static func read(_ path: String, _ offset: UInt64, _ count: Int) throws -> [UInt8] {
        let fd = try FileDescriptor.openForReading(path)
        defer { fd.close() }
        return try fd.read(count: count, at: offset)
    }

    /// Splits stored header + index bytes.
    static func decodeStored(_ bytes: [UInt8]) -> (header: PackHeader, index: PackIndex)? {
        guard bytes.count > PackHeader.size,
            let header = try? PackHeader.decode(Array(bytes.prefix(PackHeader.size)), fileSize: nil, source: "stored")
        else { return nil }
        guard
            let index = try? PackIndex.decode(Array(bytes.dropFirst(PackHeader.size)), header: header, source: "stored")
        else { return nil }
        return (header, index)
    }

    /// Removes a release folder whose files are read-only. Only folders are made writable: the
    /// files may be hard links shared with another release (or container), whose modes must stay.
    static func removeRelease(_ folder: String) {
        if let walker = FileManager.default.enumerator(atPath: folder) {
            for case let p as String in walker where (try? FileSystem.linkStatus(folder + "/" + p))??.kind == .directory
            {
                chmod(folder + "/" + p, 0o755)
            }
        }
        FileSystem.removeTree(folder)
    }
}

/// The files being assembled, shared by the download threads: each is created (or, after a
/// crash, reopened) by the first write of one of its chunks, and as soon as its last chunk is
/// written it is checked against its SHA-256, made read-only and closed, so no more files are
/// open than are being written. Nothing is flushed per file: ``syncAll(holding:)`` flushes the
/// file system once, before the release is switched.
final class OpenFiles: Sendable {
    /// The release being assembled; each file is at its index path beneath it.
    let folder: String
    /// The index's file records (for each file's path, size and SHA-256), by file number.
    let files: [PackIndex.File]
    /// The index's chunk table: a file of one chunk has that chunk's SHA-256, and every chunk
    /// written was checked against its ID first, so such a file is not read back.
    let chunks: [PackIndex.Chunk]
    let source: String
    private let open = Mutex<[Int32: FileDescriptor]>([:])
    /// How many chunk writes each file receives (read without a lock: it never changes).
    private let pieces: [Int32]
    private let remaining: Mutex<[Int32]>

    /// - Parameters:
    ///   - files: the index's records, by file number (``Placement/file``).
    ///   - placements: how many chunk writes each file will receive (0 for a file not written).
    init(folder: String, files: [PackIndex.File], placements: [Int32], chunks: [PackIndex.Chunk], source: String) {
        self.folder = folder
        self.files = files
        self.chunks = chunks
        self.source = source
        pieces = placements
        remaining = Mutex(placements)
    }

    /// Where file `file` is written (made when asked: no path is kept for each of 200,000 files).
    func path(of file: Int32) -> String { folder + "/" + files[Int(file)].path }

    /// The mode of an installed file: read-only, executable if it was.
    static func installedMode(_ mode: UInt32) -> mode_t { mode == 0o755 ? 0o555 : 0o444 }

    /// The open descriptor of a file written in several pieces, made by the first of them.
    func descriptor(_ file: Int32) throws -> FileDescriptor {
        try open.withLock { files in
            if let fd = files[file] { return fd }
            let fd = try create(file)
            files[file] = fd
            return fd
        }
    }

    /// Creates file `file` (or, left by an earlier attempt and already sanitized, opens it and
    /// keeps it at the size the index says).
    private func create(_ file: Int32) throws -> FileDescriptor {
        let path = self.path(of: file)
        var raw = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
        if raw < 0 && errno == EEXIST {
            raw = Glibc.open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
            if raw >= 0 && ftruncate(raw, off_t(files[Int(file)].size)) != 0 {
                let err = errno
                Glibc.close(raw)
                throw SystemCall.error("truncate", path: path, errno: err)
            }
        }
        guard raw >= 0 else { throw SystemCall.error("open", path: path) }
        return FileDescriptor(rawValue: raw, path: path)
    }

    /// Writes a chunk at its place (or only counts it, when `bytes` is nil: it is there already).
    ///
    /// A file of one piece (most files of a pack of small files) is written by the one thread
    /// that has its chunk, with no lock: created, written, checked, made read-only and closed.
    /// Holding the shared table's lock across the creation of every file made the download
    /// threads queue behind each other's `open` (16 % of a 50,000-file install in `perf`).
    func account(_ place: Placement, writing bytes: [UInt8]?) throws {
        if pieces[Int(place.file)] == 1 {
            let fd = try create(place.file)
            defer { fd.close() }
            if let bytes { try bytes.withUnsafeBytes { try fd.write($0, at: place.offset) } }
            try finish(place.file, fd)
            return
        }
        let fd = try descriptor(place.file)
        if let bytes { try bytes.withUnsafeBytes { try fd.write($0, at: place.offset) } }
        let complete = remaining.withLock { r -> Bool in
            r[Int(place.file)] -= 1
            return r[Int(place.file)] == 0
        }
        guard complete else { return }
        try finish(place.file, fd)
        open.withLock { _ = $0.removeValue(forKey: place.file) }
        fd.close()
    }

    /// Checks a file whose every piece is written against its SHA-256 and makes it read-only.
    private func finish(_ number: Int32, _ fd: FileDescriptor) throws {
        let file = files[Int(number)]
        if file.chunks.count == 1 {
            try file.check(chunks[file.chunks[0]].id, source: source)
        } else {
            try file.check(try SHA256.hash(descriptor: fd), source: source)
        }
        guard fchmod(fd.rawValue, Self.installedMode(file.mode)) == 0 else {
            throw SystemCall.error("chmod", path: fd.path)
        }
    }

    /// Makes every file written durable with one flush of the file system that holds `folder`
    /// (the release being assembled), instead of one blocking flush per file.
    func syncAll(holding folder: String) throws {
        try TreeFlush.syncFileSystem(holding: folder)
    }

    func closeAll() {
        open.withLock { files in
            for fd in files.values { fd.close() }
            files.removeAll()
        }
    }
}

/// A byte counter shared by download threads.
final class AtomicBytes: Sendable {
    private let storage = Atomic<UInt64>(0)
    @discardableResult
    func add(_ n: UInt64) -> UInt64 { storage.wrappingAdd(n, ordering: .relaxed).newValue }
    var value: UInt64 { storage.load(ordering: .relaxed) }
}

/// A server asked to come back later (503 or 429 with `Retry-After`).
struct RetryLater: Error {
    let seconds: Int
    let status: Int
    let url: String
}
