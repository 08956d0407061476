import BacklotBasics
import BacklotCrypto
import Dispatch
import Synchronization

/// The SHA-256s of a build's large files, computed on a thread of their own from the chunks the
/// reading thread cuts, so that the reading thread only reads and cuts. A large file's digest
/// is a pass over all its bytes, in order, that no other thread can share; made on the reading
/// thread it left that thread the slowest stage while the workers compressed content that
/// compresses quickly (random bytes), with a core partly idle.
///
/// Each batch's chunks are handed over in the order they were cut (``hash(_:countedBy:)``) and
/// hashed in that order by a one-thread pool: a file's chunks may span batches, and a batch may
/// hold the end of one file and the start of the next. ``finish()``, once every batch's group
/// has been waited for, gives the last file's digest with the others.
///
/// ```swift
/// let digests = LargeFileDigests()
/// defer { digests.stop() }
/// digests.hash(batch, countedBy: done)  // done.wait() before the batch is appended
/// let byFile = digests.finish()
/// ```
final class LargeFileDigests: Sendable {
    private struct State: ~Copyable {
        var file = -1
        var hasher: SHA256? = nil
        var digests: [Int: SHA256Digest] = [:]

        /// Ends the file being hashed, if any.
        mutating func endFile() {
            if let done = hasher.take() { digests[file] = done.finalize() }
        }
    }

    private let state = Mutex(State())
    private let thread = BlockingPool(threads: 1, name: "backlot-hash")

    /// Hashes `chunks` (of one or more files, in file order, following the chunks of earlier
    /// calls) on the hashing thread; `group` is left once they are hashed.
    func hash(_ chunks: [(file: Int, bytes: [UInt8])], countedBy group: DispatchGroup) {
        let queued = thread.submit(countedBy: group) { self.update(chunks) }
        // Only a stopped pool refuses work, and it is stopped once the build ends.
        if !queued { update(chunks) }
    }

    private func update(_ chunks: [(file: Int, bytes: [UInt8])]) {
        state.withLock { s in
            for chunk in chunks {
                if chunk.file != s.file || s.hasher == nil {
                    s.endFile()
                    s.file = chunk.file
                    s.hasher = SHA256()
                }
                s.hasher!.update(chunk.bytes)
            }
        }
    }

    /// Every large file's SHA-256, by file number. Call it once every group given to
    /// ``hash(_:countedBy:)`` has been waited for.
    func finish() -> [Int: SHA256Digest] {
        state.withLock { s in
            s.endFile()
            return s.digests
        }
    }

    /// Ends the hashing thread (after what was queued).
    func stop() { thread.stop() }
}
