import BacklotBasics
import Dispatch
import Synchronization

/// A pack file's writes, made in order on a thread of their own, so that the thread that reads
/// and cuts the sources only hands its compressed chunks over. Copying bytes into the page cache
/// costs about as much as hashing them; made on the reading thread, it kept that thread the
/// slowest stage wherever the workers compress quickly (random bytes), with a core partly idle.
///
/// Pieces are gathered into writes of ``writeSize`` and the file's write-back is started every
/// ``FileDescriptor/writebackStep``, as the reading thread did before. At most ``queuedLimit``
/// hand-overs wait at once (``write(_:)`` waits for room), so memory stays bounded whatever the
/// disk's speed. The first failure is thrown by the next ``write(_:)`` or by ``finish()``; what
/// was queued after it is not written.
///
/// ```swift
/// let writes = PackFileWrites(descriptor: output.descriptor)
/// defer { writes.stop() }
/// try writes.write([frame1, frame2])
/// try writes.finish()  // every byte handed over is written
/// ```
final class PackFileWrites: Sendable {
    /// The bytes written in one system call.
    static let writeSize = 4 << 20
    /// Hand-overs waiting for the thread at most.
    static let queuedLimit = 4

    private struct Output: ~Copyable {
        var buffer: [UInt8] = []
        var written: UInt64 = 0
        var writebackStarted: UInt64 = 0
        var failure: (any Error)? = nil
    }

    private let descriptor: FileDescriptor
    /// Touched by the writing thread, and by ``finish()`` once that thread is idle.
    private let output = Mutex(Output())
    private let thread = BlockingPool(threads: 1, name: "backlot-write")
    private let queued = DispatchGroup()
    private let room = DispatchSemaphore(value: PackFileWrites.queuedLimit)

    /// Writes to `descriptor` at its current position.
    init(descriptor: FileDescriptor) {
        self.descriptor = descriptor
    }

    /// Queues `pieces` to be written, in order, after what was queued before.
    /// - Throws: the first failure of an earlier write (``BacklotError/Code/io``).
    func write(_ pieces: [[UInt8]]) throws {
        try throwFailure()
        room.wait()
        let submitted = thread.submit(countedBy: queued) {
            defer { self.room.signal() }
            self.output.withLock { o in
                guard o.failure == nil else { return }
                do {
                    for piece in pieces {
                        o.buffer += piece
                        if o.buffer.count >= Self.writeSize { try self.flush(&o) }
                    }
                } catch {
                    o.failure = error
                }
            }
        }
        if !submitted {
            room.signal()
            preconditionFailure("a pack's writes were queued after the build ended")
        }
    }

    /// Waits for every write queued, then writes what is left in the buffer.
    /// - Throws: the first failure (``BacklotError/Code/io``).
    func finish() throws {
        queued.wait()
        try output.withLock { o in
            if let failure = o.failure { throw failure }
            try flush(&o)
        }
    }

    /// Ends the writing thread once what was queued is done (or skipped after a failure).
    func stop() { thread.stop() }

    private func throwFailure() throws {
        if let failure = output.withLock({ $0.failure }) { throw failure }
    }

    private func flush(_ o: inout Output) throws {
        guard !o.buffer.isEmpty else { return }
        try descriptor.write(o.buffer)
        o.written += UInt64(o.buffer.count)
        o.buffer.removeAll(keepingCapacity: true)
        // The disk starts on what is written while the build goes on, so that the flush before
        // the rename waits for the last pieces rather than for the whole pack.
        if o.written - o.writebackStarted >= FileDescriptor.writebackStep {
            descriptor.startWriteback()
            o.writebackStarted = o.written
        }
    }
}
