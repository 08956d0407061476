import BacklotBasics

#if canImport(Glibc)
import Glibc
#endif

/// An upload into a file of the data folder, locked (``FileLock``) so that one request at a time
/// appends to it; ``finish()`` flushes it to disk.
final class LocalUploadSink: UploadSink {
    let descriptor: FileDescriptor
    private let lock: FileLock
    private(set) var received: UInt64
    private var open = true

    /// - Throws: ``BacklotError/Code/conflict`` when another request holds the file.
    init(path: String, label: String) throws {
        guard let lock = try FileLock.acquire(path, .exclusive, waiting: false) else {
            throw BacklotError(
                .conflict, "another upload to this version is in progress", context: label,
                hint: "wait for it to end, or ask for the version's status and resume from the byte it gives")
        }
        self.lock = lock
        let fd: Int32
        do { fd = try SystemCall.retrying("open", path: path) { Glibc.open(path, O_WRONLY | O_CLOEXEC, 0o600) } } catch
        {
            lock.release()
            throw error
        }
        descriptor = FileDescriptor(rawValue: fd, path: path)
        do { received = try descriptor.size() } catch {
            descriptor.close()
            lock.release()
            throw error
        }
    }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        try descriptor.write(bytes, at: received)
        received += UInt64(bytes.count)
    }

    func finish() throws -> UInt64 {
        guard open else { return received }
        open = false
        defer {
            descriptor.close()
            lock.release()  // whatever happens
        }
        try descriptor.sync()
        return received
    }

    func abandon() {
        guard open else { return }
        open = false
        descriptor.close()
        lock.release()
    }

    deinit { abandon() }
}
