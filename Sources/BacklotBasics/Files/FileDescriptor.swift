import CLinuxSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An open file, closed by ``close()``. Reads and writes loop until done and retry on `EINTR`.
public struct FileDescriptor: Sendable {
    /// The raw descriptor.
    public let rawValue: Int32
    /// The path it was opened with, for error messages.
    public let path: String

    public init(rawValue: Int32, path: String) {
        self.rawValue = rawValue
        self.path = path
    }

    /// Opens `path` for reading.
    public static func openForReading(_ path: String) throws -> FileDescriptor {
        let fd = try SystemCall.retrying("open", path: path) { open(path, O_RDONLY | O_CLOEXEC) }
        return FileDescriptor(rawValue: fd, path: path)
    }

    /// Reads a whole file that may be at most `limit` bytes (configurations, manifests, property lists).
    ///
    /// Only a regular file is read: the open does not wait (a FIFO left where a file is expected
    /// would otherwise block it for as long as nobody writes to it), and a FIFO, device or folder
    /// is refused.
    /// - Parameters:
    ///   - what: what the file is, for the error ("the manifest").
    ///   - code: the error code for a file over the limit, or one that is not a regular file.
    ///   - followingLinks: false refuses a symbolic link at `path` (a file another process wrote).
    /// - Throws: `code` when the file is larger than `limit` or not a regular file; ``BacklotError/Code/io``.
    public static func readWholeFile(
        _ path: String, atMost limit: UInt64, what: String, code: BacklotError.Code = .invalidInput,
        followingLinks: Bool = true
    ) throws -> [UInt8] {
        let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followingLinks ? 0 : O_NOFOLLOW)
        let fd = FileDescriptor(
            rawValue: try SystemCall.retrying("open", path: path) { open(path, flags) }, path: path)
        defer { fd.close() }
        guard try fd.status().st_mode & S_IFMT == S_IFREG else {
            throw BacklotError(code, "\(what) is not a regular file", context: path)
        }
        let size = try fd.size()
        guard size <= limit else {
            throw BacklotError(code, "\(what) is \(size) bytes; at most \(limit >> 20) MiB are read", context: path)
        }
        return try fd.read(count: Int(size), at: 0)
    }

    /// Opens the existing regular file `path` a second time, for writes that go from the caller's
    /// buffer to the device without a copy into the page cache (`O_DIRECT`): for a large file
    /// written once and not read back soon, that copy costs a core about as much as hashing the
    /// bytes. Every buffer, offset and length written through it must be a multiple of
    /// ``directAlignment``. Nil when it cannot be opened so (a file system that does not take
    /// such writes, as some network and FUSE ones, or any other refusal): write through an
    /// ordinary descriptor then.
    public static func openForDirectWriting(_ path: String) -> FileDescriptor? {
        while true {
            let fd = clinux_open_direct_write(path)
            if fd >= 0 { return FileDescriptor(rawValue: fd, path: path) }
            if errno != EINTR { return nil }
        }
    }

    /// What buffers, offsets and lengths written through ``openForDirectWriting(_:)`` are
    /// multiples of (a page: every block size Linux supports divides it).
    public static let directAlignment = 4096

    /// Starts writing the file's dirty pages to disk and returns at once, so that the flush that
    /// makes it durable later has less to wait for (the disk works while the caller goes on).
    /// Best effort: it promises nothing by itself, and a failure is left to that flush to report.
    public func startWriteback() { _ = clinux_start_writeback(rawValue) }

    /// How much of a file written in pieces is written between two ``startWriteback()`` calls
    /// (8 MiB): the installer's files and a pack being built alike.
    public static let writebackStep: UInt64 = 8 << 20

    public func size() throws -> UInt64 {
        UInt64(try status().st_size)
    }

    /// The open file's whole `fstat` (times, inode, mode).
    /// - Throws: ``BacklotError/Code/io`` when `fstat` fails.
    public func status() throws -> stat {
        var st = stat()
        try SystemCall.retrying("fstat", path: path) { fstat(rawValue, &st) }
        return st
    }

    /// Reads exactly `count` bytes at `offset`; fails if the file ends first.
    public func read(count: Int, at offset: UInt64) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let got = try bytes.withUnsafeMutableBytes { try read(into: $0, at: offset) }
        guard got == count else {
            throw BacklotError(
                .corruptArchive,
                "the file ends at byte \(offset + UInt64(got)), before the \(count) bytes expected at offset \(offset)",
                context: path, hint: "the file is truncated: copy or download it again")
        }
        return bytes
    }

    /// Reads up to `buffer.count` bytes at `offset`, returning how many were read (fewer only at end of file).
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        var done = 0
        while done < buffer.count {
            let n = try SystemCall.retrying("read", path: path) {
                pread(rawValue, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Reads up to `buffer.count` bytes from the current position (fewer only at end of file).
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var done = 0
        while done < buffer.count {
            let n = try SystemCall.retrying("read", path: path) {
                Glibc.read(rawValue, buffer.baseAddress! + done, buffer.count - done)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Writes all of `buffer` at the current position.
    public func write(_ buffer: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < buffer.count {
            let n = try SystemCall.retrying("write", path: path) {
                Glibc.write(rawValue, buffer.baseAddress! + done, buffer.count - done)
            }
            done += n
        }
    }

    /// Writes all of `bytes` at the current position.
    public func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }

    /// Writes all of `buffer` at `offset`, leaving the current position alone.
    public func write(_ buffer: UnsafeRawBufferPointer, at offset: UInt64) throws {
        var done = 0
        while done < buffer.count {
            let n = try SystemCall.retrying("write", path: path) {
                pwrite(rawValue, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            }
            done += n
        }
    }

    /// Flushes the file's data and metadata to stable storage.
    public func sync() throws {
        try SystemCall.retrying("fsync", path: path) { fsync(rawValue) }
    }

    /// Closes the descriptor. Errors on close are ignored: data safety comes from ``sync()``.
    public func close() {
        _ = Glibc.close(rawValue)
    }
}
