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
        let target = URL(fileURLWithPath: directory).standardizedFileURL.path
        let parent = URL(fileURLWithPath: target).deletingLastPathComponent().path
        if let st = try FileSystem.linkStatus(target) {
            guard st.kind == .directory, try FileSystem.entryNames(target).isEmpty else {
                throw BacklotError(.alreadyExists, "the target exists and is not an empty directory", context: directory,
                                   hint: "choose a new path; extract never mixes a pack into existing files")
            }
        }
        guard let pst = try FileSystem.status(parent), pst.kind == .directory else {
            throw BacklotError(.io, "the parent folder does not exist", context: parent, hint: "create it first")
        }
        let total = pack.index.installSize
        if let free = FileSystem.availableBytes(at: parent), free < total + (1 << 20) {
            throw BacklotError(.io, "the pack needs \(total) bytes but only \(free) are free", context: parent, hint: "free some disk space")
        }

        let staging = try FileSystem.makeTemporaryDirectory(in: parent, prefix: ".\(URL(fileURLWithPath: target).lastPathComponent).partial-")
        TemporaryFiles.shared.register(staging)
        defer { TemporaryFiles.shared.unregister(staging) }
        do {
            try createTree(in: staging)
            try writeContents(in: staging, progress: progress)
            syncDirectories(in: staging)
            if FileSystem.exists(target) { _ = rmdir(target) }
            try SystemCall.retrying("rename", path: target) { rename(staging, target) }
            FileSystem.syncDirectory(parent)
        } catch {
            FileSystem.removeTree(staging)
            throw error
        }
    }

    /// Creates every folder and every (empty) file. Folders are named by their bytes
    /// (``BytePath``): two names that differ only by Unicode normalisation are two folders.
    private func createTree(in root: String) throws {
        var made = Set<BytePath.Key>()
        for file in pack.index.files {
            for dir in BytePath.ancestors(of: file.path) where made.insert(BytePath.Key(dir)).inserted {
                try FileSystem.makeDirectory(root + "/" + dir)
            }
            let full = root + "/" + file.path
            let fd = open(full, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode_t(file.mode))
            guard fd >= 0 else { throw SystemCall.error("create", path: full) }
            fchmod(fd, mode_t(file.mode))
            close(fd)
        }
    }

    /// One piece of work: a run of a file's chunks (at most ~8 MiB), written at `fileOffset`.
    private struct Unit: Sendable {
        let file: Int
        let chunks: ArraySlice<Int>
        let fileOffset: UInt64
    }

    private func units() -> [Unit] {
        var out: [Unit] = []
        for (f, file) in pack.index.files.enumerated() {
            var start = 0, offset: UInt64 = 0, unitOffset: UInt64 = 0, bytes = 0
            for (i, ref) in file.chunks.enumerated() {
                let size = Int(pack.index.chunks[ref].uncompressedSize)
                if bytes > 0 && bytes + size > 8 << 20 {
                    out.append(Unit(file: f, chunks: file.chunks[start..<i], fileOffset: unitOffset))
                    start = i
                    unitOffset = offset
                    bytes = 0
                }
                bytes += size
                offset += UInt64(size)
            }
            if bytes > 0 { out.append(Unit(file: f, chunks: file.chunks[start...], fileOffset: unitOffset)) }
        }
        return out
    }

    private func writeContents(in root: String, progress: (@Sendable (UInt64, UInt64) -> Void)?) throws {
        let work = units()
        let pack = self.pack
        let total = pack.index.installSize
        let next = AtomicCounter(), done = AtomicCounter()
        let failures = FirstFailure()
        // Each file is flushed by the thread that writes its last piece, so the disk writes of
        // finished files overlap the decompression of the next ones. Twice as many threads as
        // cores keep the cores busy while some threads wait for the disk.
        let remaining = Mutex<[Int]>(work.reduce(into: [Int](repeating: 0, count: pack.index.files.count)) { $0[$1.file] += 1 })
        DispatchQueueRunner.run(jobs: jobs * 2) {
            let decompressor = ZstdDecompressor()
            while !failures.hasFailure {
                let u = next.increment()
                guard u < work.count else { return }
                let unit = work[u]
                let file = pack.index.files[unit.file]
                let full = root + "/" + file.path
                do {
                    let fd = open(full, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
                    guard fd >= 0 else { throw SystemCall.error("open", path: full) }
                    let out = FileDescriptor(rawValue: fd, path: full)
                    defer { out.close() }
                    // A unit that is the whole file hashes it as it writes; a file written in
                    // several units is read back and hashed by the thread that finishes it.
                    let whole = unit.chunks.count == file.chunks.count
                    var hasher = SHA256()
                    var offset = unit.fileOffset
                    for ref in unit.chunks {
                        let plain: [UInt8]
                        do {
                            plain = try pack.readChunk(ref, using: decompressor)
                        } catch let e as BacklotError {
                            throw BacklotError(e.code, e.message, context: "file \"\(file.path)\": \(e.context ?? pack.path)", hint: e.hint)
                        }
                        if whole { hasher.update(plain) }
                        try plain.withUnsafeBytes { try out.write($0, at: offset) }
                        offset += UInt64(plain.count)
                        progress?(UInt64(done.add(plain.count)), total)
                    }
                    let last = remaining.withLock { r -> Bool in
                        r[unit.file] -= 1
                        return r[unit.file] == 0
                    }
                    if last {
                        let digest = whole ? hasher.finalize() : try SHA256.hash(descriptor: out)
                        try file.check(digest, source: pack.path)
                        try out.sync()
                    }
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

    /// Flushes every folder (files were flushed as they were finished) before the rename makes them visible.
    private func syncDirectories(in root: String) {
        var dirs = Set<BytePath.Key>()
        for f in pack.index.files { for d in BytePath.ancestors(of: f.path) { dirs.insert(BytePath.Key(d)) } }
        for d in dirs { FileSystem.syncDirectory(root + "/" + d.path) }
        FileSystem.syncDirectory(root)
    }
}
