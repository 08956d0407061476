import BacklotBasics

/// Bytes an Apple Archive is read from, at any offset: a file, or an upload the server holds.
public protocol AppleArchiveSource {
    /// The archive's size in bytes.
    var size: UInt64 { get }
    /// `count` bytes at `offset` (fewer only at the end).
    func read(count: Int, at offset: UInt64) throws -> [UInt8]
}

/// An archive in a file, read with `pread`.
public final class AppleArchiveFile: AppleArchiveSource {
    let descriptor: FileDescriptor
    public let size: UInt64

    /// - Throws: ``BacklotError/Code/io`` when the file cannot be opened.
    public init(path: String) throws {
        descriptor = try FileDescriptor.openForReading(path)
        size = try descriptor.size()
    }

    deinit { descriptor.close() }

    public func read(count: Int, at offset: UInt64) throws -> [UInt8] { try descriptor.read(count: count, at: offset) }
}
