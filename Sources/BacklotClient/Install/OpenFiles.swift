import BacklotBasics
import BacklotCrypto
import BacklotFormat
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The files being assembled, shared by the download threads: each is created (or, after a
/// crash, reopened) by the first write of one of its chunks, and as soon as its last chunk is
/// written it is checked against its SHA-256, made read-only and closed, so no more files are
/// open than are being written. The disk is started on large files as they are written and on
/// small ones in batches (``flushAhead(_:)``), and ``syncAll(holding:)`` flushes the release,
/// before it is switched: that flush alone is what the durability rule counts on.
final class OpenFiles: Sendable {
    /// The release being assembled; each file is at its index path beneath it.
    let folder: String
    /// ``folder``, open, when files are made beneath it through no link.
    let beneath: DirectoryHandle?
    /// The index's file records (for each file's path, size and SHA-256), by file number.
    let files: PackIndex.FileTable
    /// The index's chunk table: a file of one chunk has that chunk's SHA-256, and every chunk
    /// written was checked against its ID first, so such a file is not read back.
    let chunks: [PackIndex.Chunk]
    let source: String
    private let open = Mutex<[Int32: FileDescriptor]>([:])
    /// How many chunk writes each file receives (read without a lock: it never changes).
    private let pieces: [Int32]
    private let remaining: Mutex<[Int32]>
    /// Bytes of small files finished since the last flush of the file system was started, and
    /// whether one is running (``flushAhead(_:)``).
    private let unflushed = Atomic<UInt64>(0)
    private let flushing = Atomic<Bool>(false)
    /// How many bytes of small files start a flush ahead of the last one (``flushAhead(_:)``).
    let flushAheadBytes: UInt64
    /// Flushes ahead started (what `OpenFilesTests` checks).
    let flushesAhead = Atomic<Int>(0)

    /// - Parameters:
    ///   - files: the index's records, by file number (``Placement/file``).
    ///   - placements: how many chunk writes each file will receive (0 for a file not written).
    ///   - flushAheadBytes: every this many bytes of small files written, a flush of the file
    ///     system is started ahead of the last (``defaultFlushAheadBytes``).
    ///   - beneath: `folder`, open: files are then made beneath it through no link (the app can
    ///     change the folder while the install runs). Without it, by path (`O_NOFOLLOW` on the
    ///     last name only).
    init(
        folder: String, beneath: DirectoryHandle? = nil, files: PackIndex.FileTable, placements: [Int32],
        chunks: [PackIndex.Chunk], source: String,
        flushAheadBytes: UInt64 = OpenFiles.defaultFlushAheadBytes
    ) {
        self.flushAheadBytes = max(1, flushAheadBytes)
        self.folder = folder
        self.beneath = beneath
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
        func open(_ flags: Int32) -> Int32 {
            if let beneath { return beneath.openBeneath(files[Int(file)].path, flags: flags, mode: 0o644) }
            return Glibc.open(path, flags | O_CLOEXEC | O_NOFOLLOW, 0o644)
        }
        var raw = open(O_RDWR | O_CREAT | O_EXCL)
        if raw < 0 && errno == EEXIST {
            raw = open(O_RDWR)
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
        guard let bytes else { return try account(place, writing: nil as UnsafeRawBufferPointer?) }
        try bytes.withUnsafeBytes { try account(place, writing: $0) }
    }

    /// ``account(_:writing:)`` of bytes in a buffer the caller reuses (a download's decoded chunks).
    func account(_ place: Placement, writing bytes: UnsafeRawBufferPointer?) throws {
        if pieces[Int(place.file)] == 1 {
            let fd = try create(place.file)
            defer { fd.close() }
            if let bytes { try fd.write(bytes, at: place.offset) }
            try finish(place.file, fd)
            return
        }
        let fd = try descriptor(place.file)
        if let bytes {
            try fd.write(bytes, at: place.offset)
            // A large file written in pieces starts its writing to disk each time a write crosses
            // a step, not only at its end: one file of 128 MiB otherwise left all of it to the flush.
            let end = place.offset + UInt64(bytes.count)
            if place.offset / FileDescriptor.writebackStep != end / FileDescriptor.writebackStep {
                fd.startWriteback()
            }
        }
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
        // The disk starts on a finished file while the download goes on, so the flush before
        // the switch waits for the last files rather than for all of them; small files in batches.
        if file.size >= Self.writebackSize { fd.startWriteback() } else { flushAhead(file.size) }
    }

    /// Small files are not started to disk one by one (a request to the disk per file), but not
    /// all left to the flush before the switch either: every ``flushAheadBytes`` of them, a
    /// flush of the file system (`syncfs`) is started on a thread of ``BlockingPool/longRunning``
    /// (one at a time), so that the disk writes them together while the download goes on and the
    /// last flush waits only for what came after. On the 50,000-file corpus (203 MiB) the cold
    /// install went from 1.69–1.91 s to 1.60–1.64 s (best of runs; docs/benchmarks.md). It
    /// proves nothing: only the flush before the switch does, and it reports any write error.
    private func flushAhead(_ bytes: UInt64) {
        let total = unflushed.wrappingAdd(bytes, ordering: .relaxed).newValue
        guard total >= flushAheadBytes,
            flushing.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
        else { return }
        unflushed.store(0, ordering: .relaxed)
        flushesAhead.wrappingAdd(1, ordering: .relaxed)
        BlockingPool.longRunning.submit { [self] in
            try? TreeFlush.syncFileSystem(holding: folder)  // an error is the last flush's to report
            flushing.store(false, ordering: .releasing)
        }
    }

    /// 32 MiB: a batch of small files the disk writes in one go.
    static let defaultFlushAheadBytes: UInt64 = 32 << 20

    /// The size from which a finished file's writing to disk is started at once (1 MiB).
    static let writebackSize: UInt64 = 1 << 20

    /// Makes the release being assembled durable (``TreeFlush/flush(tree:files:)``): file by file
    /// when it has few, with one flush of its file system when it has many.
    func syncAll(holding folder: String) throws {
        try TreeFlush.flush(tree: folder, files: files.lazy.map(\.path))
    }

    func closeAll() {
        open.withLock { files in
            for fd in files.values { fd.close() }
            files.removeAll()
        }
    }
}
