import BacklotBasics
import BacklotCrypto

/// Random access to a stored archive (an upload being processed, or a blob), wherever it lives:
/// a file of the data folder (``FileArchiveReader``) or an object read by ranges
/// (``S3ArchiveReader``). Processing verifies an archive through it, so a bucket's object is
/// checked by streaming it back, never by copying it to the instance's disk first.
///
/// ```swift
/// let reader = try FileArchiveReader(path: "data/uploads/7.part")
/// let header = try reader.read(count: 64, at: 0)
/// let sha = try reader.sha256()
/// ```
public protocol ArchiveReader: AnyObject {
    /// The archive's size in bytes.
    var size: UInt64 { get }

    /// Exactly `count` bytes from `offset`.
    /// - Throws: ``BacklotError/Code/corruptArchive`` when the range goes past the end; the
    ///   storage's errors (``BacklotError/Code/io``, the object store's) when it cannot be read.
    func read(count: Int, at offset: UInt64) throws -> [UInt8]

    /// Ends the reading (closes a descriptor); reading afterwards is an error.
    func close()
}

extension ArchiveReader {
    /// The SHA-256 of the whole archive, read in order in 8 MiB pieces.
    /// - Parameter isCancelled: asked before each piece.
    /// - Throws: ``BacklotError/Code/cancelled`` once `isCancelled` says so; the reader's errors.
    public func sha256(isCancelled: () -> Bool = { false }) throws -> SHA256Digest {
        var hasher = SHA256()
        var offset: UInt64 = 0
        while offset < size {
            if isCancelled() { throw BacklotError(.cancelled, "the archive's SHA-256 was not finished: cancelled") }
            let count = Int(min(UInt64(8 << 20), size - offset))
            hasher.update(try read(count: count, at: offset))
            offset += UInt64(count)
        }
        return hasher.finalize()
    }

    /// Refuses a range past the end (checked without overflow).
    func checkRange(count: Int, at offset: UInt64, source: String) throws {
        guard count >= 0, offset <= size, UInt64(count) <= size - offset else {
            throw BacklotError(
                .corruptArchive,
                "a read of \(count) bytes at offset \(offset) goes past the archive's end (\(size) bytes)",
                context: source, hint: "the archive is truncated or its header lies: package it again")
        }
    }
}
