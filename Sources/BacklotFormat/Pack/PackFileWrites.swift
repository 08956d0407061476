import BacklotBasics
import Dispatch
import Synchronization

/// A pack file's writes, made in order on a thread of their own, so that the thread that reads
/// and cuts the sources only hands its compressed chunks over. Copying bytes into the page cache
/// costs about as much as hashing them; made on the reading thread, it kept that thread the
/// slowest stage wherever the workers compress quickly (random bytes), with a core partly idle.
///
/// Pieces are gathered into writes of ``writeSize`` and the file's write-back is started every
/// ``FileDescriptor/writebackStep`` (so that the flush before the rename waits only for the
/// last pieces). At most ``queuedLimit``
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
    }

    private let descriptor: FileDescriptor
    /// Taken by the writing thread for a whole hand-over (its `write(2)` calls included), and by
    /// ``finish()`` once that thread is idle: never by a caller of ``write(_:)``.
    private let output = Mutex(Output())
    /// The first failure, apart, so that a caller looks at it without waiting for a write.
    private let failure = Mutex<(any Error)?>(nil)
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
            guard self.failure.withLock({ $0 == nil }) else { return }
            do {
                try self.output.withLock { o in
                    for piece in pieces {
                        o.buffer += piece
                        if o.buffer.count >= Self.writeSize { try self.flush(&o) }
                    }
                }
            } catch {
                self.failure.withLock { $0 = $0 ?? error }
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
        try throwFailure()
        do {
            try output.withLock { o in try flush(&o) }
        } catch {
            failure.withLock { $0 = $0 ?? error }
            throw error
        }
    }

    /// Ends the writing thread once what was queued is done (or skipped after a failure).
    func stop() { thread.stop() }

    private func throwFailure() throws {
        if let failure = failure.withLock({ $0 }) { throw failure }
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
