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
    /// `expected` (the catalog's `index.sha256`); nil when there is no index delta. In versions 2
    /// and 3 the index delta is made between the two indexes' delta forms
    /// (``PackIndex/deltaForm(_:undo:)``). A version-3 delta with early entries needs their frames:
    /// ``rebuildIndex(from:expected:earlyFrames:base:baseChunk:using:source:)``.
    /// - Throws: ``BacklotError/Code/corruptArchive`` when it does not rebuild exactly that index.
    public func rebuildIndex(
        from baseIndex: [UInt8], expected: SHA256Digest, using decompressor: ZstdDecompressor, source: String
    ) throws -> [UInt8]? {
        try rebuildIndex(
            from: baseIndex, expected: expected, earlyFrames: [], base: nil, baseChunk: { _ in [] },
            using: decompressor, source: source)?.bytes
    }

    /// The index a delta rebuilt, and what its early entries rebuilt on the way.
    public struct RebuiltIndex: Sendable {
        /// The target's index, whose SHA-256 is the catalog's.
        public let bytes: [UInt8]
        /// Each early entry's target chunks, one after another (entry `i` of the first
        /// ``PackDelta/earlyCount``): checked with the index, as their IDs are in it.
        public let early: [[UInt8]]
    }

    /// Rebuilds the target's index as ``rebuildIndex(from:expected:using:source:)`` does and, for a
    /// version-3 delta, its early entries first: each early frame (from `earlyFrames`, the bytes of
    /// ``earlyRange``) is decompressed against its base chunks (`baseChunk(n)` gives base chunk
    /// `n`'s bytes, re-hashed here against `base`, the installed index; the index delta's own
    /// prefix starts with the ``indexBases``, read the same way), its targets' sizes read
    /// from the rebuilt index, and each target's SHA-256 written where the index delta left 32 zero
    /// bytes. Only then is the whole index checked against `expected`: a wrong frame, base or
    /// index delta gives another SHA-256 and nothing is trusted. The work before that check is
    /// bounded by the early limits (``maximumEarlyFrameBytes``, ``maximumEarlyOutputBytes``,
    /// ``maximumEarlyBaseBytes``), whatever the delta declares.
    ///
    /// ```swift
    /// let rebuilt = try delta.rebuildIndex(
    ///     from: oldIndex, expected: catalogIndexSHA256, earlyFrames: try range(url, delta.earlyRange),
    ///     base: installed, baseChunk: { try installedChunk($0) }, using: ZstdDecompressor(), source: url)
    /// ```
    /// - Throws: ``BacklotError/Code/corruptArchive`` when the index or an early entry is wrong
    ///   (naming the entry), or what `baseChunk` throws.
    public func rebuildIndex(
        from baseIndex: [UInt8], expected: SHA256Digest, earlyFrames: [UInt8], base: PackIndex?,
        baseChunk: (Int) throws -> [UInt8], using decompressor: ZstdDecompressor, source: String
    ) throws -> RebuiltIndex? {
        guard !indexDelta.isEmpty else { return nil }
        let refused = BacklotError(
            .corruptArchive, "the index rebuilt from the delta does not have the catalog's SHA-256",
            context: source, hint: "the index is read from the archive instead")
        var prefix = baseIndex
        if formatVersion >= 2 {
            guard let form = PackIndex.deltaForm(baseIndex) else { throw refused }
            prefix = form
        }
        if !indexBases.isEmpty {
            guard let base else { throw Self.refusal("the index delta refers to base chunks", source) }
            prefix = try indexBasePrefix(base: base, baseChunk: baseChunk, source: source) + prefix
        }
        var bytes = try decompressor.decompress(indexDelta, prefix: prefix, expectedSize: Int(targetIndexLength))
        if formatVersion >= 2 {
            guard let index = PackIndex.deltaForm(bytes, undo: true) else { throw refused }
            bytes = index
        }
        var early: [[UInt8]] = []
        if earlyCount > 0 {
            guard let base, UInt64(earlyFrames.count) == UInt64(earlyRange.count) else {
                throw Self.refusal("the early frames are missing or cut short", source)
            }
            early = try rebuildEarly(
                into: &bytes, frames: earlyFrames, base: base, baseChunk: baseChunk,
                using: decompressor, source: source)
        }
        guard SHA256.hash(bytes) == expected, expected == target else { throw refused }
        return RebuiltIndex(bytes: bytes, early: early)
    }

    /// Version 3: the index bases' bytes, each checked against its ID in `base`, within
    /// ``maximumIndexBaseBytes``.
    private func indexBasePrefix(
        base: PackIndex, baseChunk: (Int) throws -> [UInt8], source: String
    ) throws -> [UInt8] {
        let bad = { (message: String) in Self.refusal(message, source) }
        var total: UInt64 = 0
        for b in indexBases {
            guard b < base.chunks.count else {
                throw bad("index base \(b) is not in the base's \(base.chunks.count) chunks")
            }
            total += UInt64(base.chunks[b].uncompressedSize)
        }
        guard total <= Self.maximumIndexBaseBytes, Set(indexBases).count == indexBases.count else {
            throw bad("the index bases take \(total) bytes (at most \(Self.maximumIndexBaseBytes)) or repeat")
        }
        var prefix: [UInt8] = []
        prefix.reserveCapacity(Int(total))
        for b in indexBases {
            let chunk = try baseChunk(b)
            guard SHA256.hash(chunk) == base.chunks[b].id else {
                throw bad("index base \(b) does not have its SHA-256")
            }
            prefix += chunk
        }
        return prefix
    }

    /// Version 3: rebuilds the early entries and writes their targets' IDs into `index`.
    private func rebuildEarly(
        into index: inout [UInt8], frames: [UInt8], base: PackIndex, baseChunk: (Int) throws -> [UInt8],
        using decompressor: ZstdDecompressor, source: String
    ) throws -> [[UInt8]] {
        let bad = { (message: String) in Self.refusal(message, source) }
        guard let table = PackIndex.chunkRecords(of: index) else { throw bad("the rebuilt index has no chunk table") }
        var early: [[UInt8]] = []
        var output: UInt64 = 0
        var baseBytes: UInt64 = 0
        // Each base chunk is read and checked once, however many entries list it; every listing
        // counts towards the bound on the bytes the prefixes are made of.
        var read: [Int: [UInt8]] = [:]
        var frameStart = 0
        for (i, slot) in slots.prefix(earlyCount).enumerated() {
            var sizes: [Int] = []
            for t in slot.targets {
                guard t < table.count else { throw bad("early entry \(i) names target chunk \(t) of \(table.count)") }
                let at = table.start + t * table.size
                // The ID is left out, so 32 zero bytes; a chunk another early entry rebuilt has one.
                guard index[at..<at + 32].allSatisfy({ $0 == 0 }) else {
                    throw bad("early entry \(i) rebuilds chunk \(t), whose ID is not left out (or rebuilt twice)")
                }
                let end = at + table.size
                let size =
                    UInt64(index[end - 4]) | UInt64(index[end - 3]) << 8 | UInt64(index[end - 2]) << 16
                    | UInt64(index[end - 1]) << 24
                guard (1...Self.maximumOutputBytes).contains(size) else {
                    throw bad("early entry \(i)'s chunk \(t) declares \(size) bytes")
                }
                output += size
                guard output <= Self.maximumEarlyOutputBytes else {
                    throw bad("the early entries rebuild more than \(Self.maximumEarlyOutputBytes) bytes")
                }
                sizes.append(Int(size))
            }
            let entryOutput = sizes.reduce(0, +)
            guard entryOutput <= Int(Self.maximumOutputBytes),
                UInt64(slot.length) <= Self.frameBound(UInt64(entryOutput))
            else {
                throw bad("early entry \(i) rebuilds \(entryOutput) bytes with a frame of \(slot.length)")
            }
            guard Set(slot.bases).count == slot.bases.count else { throw bad("early entry \(i) lists a base twice") }
            var prefix: [UInt8] = []
            for b in slot.bases {
                guard b < base.chunks.count else {
                    throw bad("early entry \(i) names base chunk \(b) of \(base.chunks.count)")
                }
                baseBytes += UInt64(base.chunks[b].uncompressedSize)
                guard baseBytes <= Self.maximumEarlyBaseBytes else {
                    throw bad("the early entries refer to more than \(Self.maximumEarlyBaseBytes) bytes of base chunks")
                }
                if read[b] == nil {
                    let chunk = try baseChunk(b)
                    guard SHA256.hash(chunk) == base.chunks[b].id else {
                        throw bad("base chunk \(b) of early entry \(i) does not have its SHA-256")
                    }
                    read[b] = chunk
                }
                prefix += read[b] ?? []
            }
            let length = Int(slot.length)
            let plain: [UInt8]
            do {
                plain = try frames.withUnsafeBytes { all in
                    try prefix.withUnsafeBytes {
                        try decompressor.decompress(
                            UnsafeRawBufferPointer(rebasing: all[frameStart..<frameStart + length]), prefix: $0,
                            expectedSize: entryOutput)
                    }
                }
            } catch let e as BacklotError {
                throw bad("early entry \(i): \(e.message)")
            }
            var start = 0
            for (t, size) in zip(slot.targets, sizes) {
                let id = plain.withUnsafeBytes {
                    SHA256.hash(UnsafeRawBufferPointer(rebasing: $0[start..<start + size]))
                }
                let at = table.start + t * table.size
                index.replaceSubrange(at..<at + 32, with: id.bytes)
                start += size
            }
            early.append(plain)
            frameStart += length
        }
        return early
    }
}
