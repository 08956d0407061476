import BacklotBasics
import BacklotCrypto
import Dispatch
import Synchronization

/// The SHA-256 of an archive being processed, made on a thread of its own with a reader of its
/// own while the processing thread checks the archive's chunks.
///
/// The digest is one pass over the archive's bytes and the check another (every chunk
/// decompressed and hashed); neither needs the other, so on two cores they take the time of the
/// longer instead of both (50,000 small files: 0.85 s to about 0.7 for an upload and its processing).
///
/// ```swift
/// let digest = ArchiveDigestTask { try FileArchiveReader(path: uploadPath) }
/// let checked = try UploadedPackCheck.run(reader: reader, maximumInstallSize: limit, isCancelled: { false })
/// let sha = try digest.wait()
/// ```
final class ArchiveDigestTask: Sendable {
    private let result = Mutex<Result<SHA256Digest, any Error>?>(nil)
    private let cancelled = Atomic<Bool>(false)
    private let done = DispatchGroup()
    private let thread = BlockingPool(threads: 1, name: "backlot-digest")

    /// Starts hashing the archive `open` opens (closed once hashed).
    init(open: @escaping @Sendable () throws -> any ArchiveReader) {
        let queued = thread.submit(countedBy: done) { self.run(open) }
        // Only a stopped pool refuses work, and this one has just been made.
        if !queued { run(open) }
    }

    private func run(_ open: () throws -> any ArchiveReader) {
        let outcome = Result { () throws -> SHA256Digest in
            let reader = try open()
            defer { reader.close() }
            return try reader.sha256(isCancelled: { self.cancelled.load(ordering: .relaxed) })
        }
        result.withLock { $0 = outcome }
    }

    /// The digest, once made.
    /// - Throws: what opening or reading the archive threw; ``BacklotError/Code/cancelled``
    ///   after ``cancel()``.
    func wait() throws -> SHA256Digest {
        done.wait()
        thread.stop()
        return try result.withLock { $0! }.get()
    }

    /// Stops the hashing at its next piece (8 MiB) and waits for its thread.
    func cancel() {
        cancelled.store(true, ordering: .relaxed)
        done.wait()
        thread.stop()
    }
}
