import BacklotBasics
import BacklotCrypto
import BacklotZstd

extension PackDelta {
    /// Rebuilds an entry's target chunks from its frame and the base chunks' bytes (concatenated
    /// in the entry's order, each already checked against its ID by the caller): decompressed into
    /// a buffer of exactly the entry's ``PackDelta/Entry/outputSize``, then each target's bytes
    /// checked against its ID. The result is the targets' bytes, one after another.
    ///
    /// ```swift
    /// let bytes = try PackDelta.apply(entry, frame: frame, prefix: oldChunk, using: ZstdDecompressor(), source: url)
    /// ```
    /// - Throws: ``BacklotError/Code/corruptArchive`` when the frame is damaged, expands past the
    ///   declared size, or gives bytes of another SHA-256 (a changed delta, a wrong base).
    public static func apply(
        _ entry: Entry, frame: UnsafeRawBufferPointer, prefix: [UInt8], using decompressor: ZstdDecompressor,
        source: String
    ) throws -> [UInt8] {
        let location = {
            "\(source): delta of chunk \(entry.targets.first?.id.short ?? "")… (\(entry.targets.count) in all) at offset \(entry.offset)"
        }
        let plain: [UInt8]
        do {
            plain = try prefix.withUnsafeBytes {
                try decompressor.decompress(frame, prefix: $0, expectedSize: entry.outputSize)
            }
        } catch let e as BacklotError {
            throw BacklotError(
                .corruptArchive, e.message, context: location(), hint: "the chunks are fetched whole instead")
        }
        var start = 0
        for t in entry.targets {
            let id = plain.withUnsafeBytes {
                SHA256.hash(UnsafeRawBufferPointer(rebasing: $0[start..<start + Int(t.size)]))
            }
            guard id == t.id else {
                throw BacklotError(
                    .corruptArchive, "a rebuilt chunk's SHA-256 is \(id.short)…, not \(t.id.short)…",
                    context: location(), hint: "the chunks are fetched whole instead")
            }
            start += Int(t.size)
        }
        return plain
    }

    /// Rebuilds the target's index from ``indexDelta`` and the base's index bytes, checked against
    /// `expected` (the catalog's `index.sha256`); nil when there is no index delta. In version 2
    /// the index delta is made between the two indexes' delta forms (``PackIndex/deltaForm(_:undo:)``).
    /// - Throws: ``BacklotError/Code/corruptArchive`` when it does not rebuild exactly that index.
    public func rebuildIndex(
        from baseIndex: [UInt8], expected: SHA256Digest, using decompressor: ZstdDecompressor, source: String
    ) throws -> [UInt8]? {
        guard !indexDelta.isEmpty else { return nil }
        let refused = BacklotError(
            .corruptArchive, "the index rebuilt from the delta does not have the catalog's SHA-256",
            context: source, hint: "the index is read from the archive instead")
        var prefix = baseIndex
        if formatVersion >= 2 {
            guard let form = PackIndex.deltaForm(baseIndex) else { throw refused }
            prefix = form
        }
        var bytes = try decompressor.decompress(indexDelta, prefix: prefix, expectedSize: Int(targetIndexLength))
        if formatVersion >= 2 {
            guard let index = PackIndex.deltaForm(bytes, undo: true) else { throw refused }
            bytes = index
        }
        guard SHA256.hash(bytes) == expected, expected == target else { throw refused }
        return bytes
    }
}
