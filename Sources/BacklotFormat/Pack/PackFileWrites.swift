import BacklotBasics
import Dispatch
import Synchronization

/// A pack file's writes, made in order on a thread of their own, so that the thread that reads
/// and cuts the sources only hands its compressed chunks over. Copying bytes into the page cache
/// costs about as much as hashing them; made on the reading thread, it kept that thread the
/// slowest stage wherever the workers compress quickly (random bytes), with a core partly idle.
///
/// Pieces are gathered into writes of ``writeSize``, from offset 0. Where the file system takes
/// them, those writes go from a page-aligned buffer to the device without a copy into the page
/// cache (``FileDescriptor/openForDirectWriting(_:)``): a pack is written once and not read back,
/// and the copy cost a core about 0.5 s a GiB here, more when the cache is full and pages must be
/// reclaimed first. The last piece (shorter than a block) goes through the ordinary descriptor.
/// Elsewhere (a file system that refuses them), or after a direct write fails, every write goes through the ordinary
/// descriptor and the file's write-back is started every ``FileDescriptor/writebackStep`` (so
/// that the flush before the rename waits only for the last pieces).
///
/// At most ``queuedLimit`` hand-overs wait at once (``write(_:)`` waits for room), so memory stays
/// bounded whatever the disk's speed. The first failure is thrown by the next ``write(_:)`` or by
/// ``finish()``; what was queued after it is not written.
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
        /// ``writeSize`` bytes, page-aligned; `filled` of them wait to be written at `offset`.
        let buffer = UnsafeMutableRawBufferPointer.allocate(
            byteCount: PackFileWrites.writeSize, alignment: FileDescriptor.directAlignment)
        var filled = 0
        var offset: UInt64 = 0
        var writebackStarted: UInt64 = 0
        /// The same file opened for direct writes, while they work.
        var direct: FileDescriptor?

        deinit {
            buffer.deallocate()
            direct?.close()
        }
    }

    private let descriptor: FileDescriptor
    /// Taken by the writing thread for a whole hand-over (its `write(2)` calls included), and by
    /// ``finish()`` once that thread is idle: never by a caller of ``write(_:)``.
    private let output: Mutex<Output>
    /// The first failure, apart, so that a caller looks at it without waiting for a write.
    private let failure = Mutex<(any Error)?>(nil)
    private let thread = BlockingPool(threads: 1, name: "backlot-write")
    private let queued = DispatchGroup()
    private let room = DispatchSemaphore(value: PackFileWrites.queuedLimit)

    /// Writes to `descriptor` from offset 0, directly to the device when `bypassingPageCache`
    /// and the file system allows it (the file at `descriptor.path` is opened again: it must be
    /// the same file, else the ordinary descriptor is used).
    init(descriptor: FileDescriptor, bypassingPageCache: Bool = true) {
        self.descriptor = descriptor
        var output = Output()
        if bypassingPageCache, let direct = FileDescriptor.openForDirectWriting(descriptor.path) {
            if let mine = try? descriptor.status(), let theirs = try? direct.status(), theirs.st_dev == mine.st_dev,
                theirs.st_ino == mine.st_ino
            {
                output.direct = direct
            } else {
                direct.close()
            }
        }
        self.output = Mutex(output)
    }

    /// Whether the writes go to the device without the page cache (for the tests).
    var bypassesPageCache: Bool { output.withLock { $0.direct != nil } }

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
                    for piece in pieces { try self.append(piece, to: &o) }
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
            try output.withLock { o in
                try descriptor.write(UnsafeRawBufferPointer(rebasing: o.buffer[..<o.filled]), at: o.offset)
                o.offset += UInt64(o.filled)
                o.filled = 0
            }
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

    private func append(_ piece: [UInt8], to o: inout Output) throws {
        try piece.withUnsafeBytes { bytes in
            var from = 0
            while from < bytes.count {
                let count = min(bytes.count - from, Self.writeSize - o.filled)
                (o.buffer.baseAddress! + o.filled).copyMemory(from: bytes.baseAddress! + from, byteCount: count)
                o.filled += count
                from += count
                if o.filled == Self.writeSize { try flush(&o) }
            }
        }
    }

    /// Writes the full buffer at its offset.
    private func flush(_ o: inout Output) throws {
        let full = UnsafeRawBufferPointer(o.buffer)
        if let direct = o.direct {
            do {
                try direct.write(full, at: o.offset)
                o.offset += UInt64(full.count)
                o.filled = 0
                return
            } catch {
                // The ordinary descriptor from now on; its failure, if it fails too, is the one thrown.
                direct.close()
                o.direct = nil
                o.writebackStarted = o.offset
            }
        }
        try descriptor.write(full, at: o.offset)
        o.offset += UInt64(full.count)
        o.filled = 0
        // The disk starts on what is written while the build goes on, so that the flush before
        // the rename waits for the last pieces rather than for the whole pack.
        if o.offset - o.writebackStarted >= FileDescriptor.writebackStep {
            descriptor.startWriteback()
            o.writebackStarted = o.offset
        }
    }
}
