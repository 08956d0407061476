import BacklotBasics
import BacklotCrypto
import BacklotZstd

extension PackDelta {
    /// Rebuilds one target chunk from its frame and the base chunks' bytes (concatenated in the
    /// entry's order, each already checked against its ID by the caller): decompressed into a
    /// buffer of exactly the entry's target size, then checked against the target ID.
    ///
    /// ```swift
    /// let chunk = try PackDelta.apply(entry, frame: frame, prefix: oldChunk, using: ZstdDecompressor(), source: url)
    /// ```
    /// - Throws: ``BacklotError/Code/corruptArchive`` when the frame is damaged, expands past the
    ///   declared size, or gives bytes of another SHA-256 (a changed delta, a wrong base).
    public static func apply(
        _ entry: Entry, frame: UnsafeRawBufferPointer, prefix: [UInt8], using decompressor: ZstdDecompressor,
        source: String
    ) throws -> [UInt8] {
        let location = "\(source): delta of chunk \(entry.target.short)… at offset \(entry.offset)"
        let plain: [UInt8]
        do {
            plain = try prefix.withUnsafeBytes {
                try decompressor.decompress(frame, prefix: $0, expectedSize: Int(entry.targetSize))
            }
        } catch let e as BacklotError {
            throw BacklotError(
                .corruptArchive, e.message, context: location, hint: "the chunk is fetched whole instead")
        }
        let id = SHA256.hash(plain)
        guard id == entry.target else {
            throw BacklotError(
                .corruptArchive, "the rebuilt chunk's SHA-256 is \(id.short)…, not \(entry.target.short)…",
                context: location, hint: "the chunk is fetched whole instead")
        }
        return plain
    }

    /// Rebuilds the target's index from ``indexDelta`` and the base's index bytes, checked against
    /// `expected` (the catalog's `index.sha256`); nil when there is no index delta.
    /// - Throws: ``BacklotError/Code/corruptArchive`` when it does not rebuild exactly that index.
    public func rebuildIndex(
        from baseIndex: [UInt8], expected: SHA256Digest, using decompressor: ZstdDecompressor, source: String
    ) throws -> [UInt8]? {
        guard !indexDelta.isEmpty else { return nil }
        let bytes = try decompressor.decompress(indexDelta, prefix: baseIndex, expectedSize: Int(targetIndexLength))
        guard SHA256.hash(bytes) == expected, expected == target else {
            throw BacklotError(
                .corruptArchive, "the index rebuilt from the delta does not have the catalog's SHA-256",
                context: source, hint: "the index is read from the archive instead")
        }
        return bytes
    }
}
