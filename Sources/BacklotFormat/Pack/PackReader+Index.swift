import BacklotBasics
import BacklotCrypto

extension PackReader {
    /// Reads a pack's header and index through `read` (a byte count at an offset, from a file or
    /// an object read by ranges) and checks them: the header against the pack's `size`, the
    /// index's SHA-256 against the header's, and every structural rule of the index.
    /// - Parameters:
    ///   - source: the pack's name in errors (a path, or "the archive" on a server).
    ///   - hint: what to do with a damaged pack.
    /// - Throws: ``BacklotError/Code/invalidInput`` (not a pack, other version),
    ///   ``BacklotError/Code/corruptArchive`` (truncated, altered or crafted), what `read` throws.
    ///
    /// ```swift
    /// let (header, index) = try PackReader.checkedIndex(size: size, source: path, hint: "package it again") {
    ///     try fd.read(count: $0, at: $1)
    /// }
    /// ```
    public static func checkedIndex(
        size: UInt64, source: String, hint: String, read: (Int, UInt64) throws -> [UInt8]
    ) throws -> (header: PackHeader, index: PackIndex) {
        let header = try PackHeader.decode(
            try read(Int(min(UInt64(PackHeader.size), size)), 0), fileSize: size, source: source)
        let indexBytes = try read(Int(header.indexLength), header.indexOffset)
        let digest = SHA256.hash(indexBytes)
        guard digest == header.indexDigest else {
            throw BacklotError(
                .corruptArchive,
                "the index's SHA-256 is \(digest.short)…, but the header says \(header.indexDigest.short)…",
                context: "\(source) at offset \(header.indexOffset)", hint: hint)
        }
        return (header, try PackIndex.decode(indexBytes, header: header, source: source))
    }
}
