import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotProtocol

/// Reads back, a piece at a time, the header and index an install kept on disk
/// (``PackInstaller/writeStoredIndex(header:index:to:)``), hashing the index as it goes: at its end
/// the index must still have the catalog's SHA-256. Never whole in memory (12 MB at 200,000 files).
///
/// ```swift
/// var reader = try StoredIndexReader(path, release: release)
/// try reader.check()   // or: while try reader.read(into: buffer) > 0 { … }
/// ```
struct StoredIndexReader: ~Copyable {
    let path: String
    let expected: SHA256Digest
    private let fd: FileDescriptor
    let length: Int
    private var offset = 0
    private var hasher: SHA256? = SHA256()

    /// - Throws: ``BacklotError/Code/corruptArchive`` when the file is too short or too long to
    ///   hold a header and an index; what opening it throws.
    init(_ path: String, release: Catalog.Release) throws {
        let fd = try FileDescriptor.openForReading(path)
        let size: UInt64
        do { size = try fd.size() } catch {
            fd.close()
            throw error
        }
        guard size > UInt64(PackHeader.size), size <= UInt64(PackHeader.size) + PackHeader.maximumIndexLength else {
            fd.close()
            throw Self.changed(path)
        }
        self.path = path
        self.fd = fd
        expected = release.indexSHA256
        length = Int(size)
    }

    deinit { fd.close() }

    /// Reads the next piece into `buffer`; 0 at the end, where the index is checked.
    /// - Throws: ``BacklotError/Code/corruptArchive`` when the index no longer has the catalog's
    ///   SHA-256 (or the file changed size).
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let room = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(buffer.count, length - offset)])
        let n = try fd.read(into: room, at: UInt64(offset))
        if n == 0 {
            guard offset == length, let hasher = hasher.take(), hasher.finalize() == expected else {
                throw Self.changed(path)
            }
            return 0
        }
        let indexStart = max(0, PackHeader.size - offset)
        if indexStart < n { hasher?.update(UnsafeRawBufferPointer(rebasing: buffer[indexStart..<n])) }
        offset += n
        return n
    }

    /// Reads the whole file and checks it.
    mutating func check() throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
        defer { buffer.deallocate() }
        while try read(into: buffer) > 0 {}
    }

    static func changed(_ path: String) -> BacklotError {
        BacklotError(
            .corruptArchive, "the index kept during the install no longer has the catalog's SHA-256",
            context: path, hint: "something else wrote into the container; install again")
    }
}
