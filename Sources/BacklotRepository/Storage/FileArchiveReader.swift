import BacklotBasics

/// An archive in a file of the data folder (``ArchiveReader``).
public final class FileArchiveReader: ArchiveReader {
    let descriptor: FileDescriptor
    public let size: UInt64
    /// How the archive is named in errors.
    let source: String

    /// Opens the file for reading.
    /// - Parameter source: the archive's name in errors (never a server path for API clients).
    /// - Throws: ``BacklotError/Code/io`` (or ``BacklotError/Code/notFound``) when it cannot be opened.
    public init(path: String, source: String = "the archive") throws {
        descriptor = try FileDescriptor.openForReading(path)
        do { size = try descriptor.size() } catch {
            descriptor.close()
            throw error
        }
        self.source = source
    }

    public func read(count: Int, at offset: UInt64) throws -> [UInt8] {
        try checkRange(count: count, at: offset, source: source)
        return try descriptor.read(count: count, at: offset)
    }

    private var closed = false

    public func close() {
        guard !closed else { return }
        closed = true
        descriptor.close()
    }

    deinit { close() }
}
