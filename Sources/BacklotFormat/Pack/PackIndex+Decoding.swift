import BacklotBasics
import BacklotCrypto
import BacklotJSON
import BacklotZstd

extension PackIndex {
    /// The format's limits (`docs/format.md` §10).
    public enum Limits {
        public static let metadataBytes = 1 << 20
        public static let chunkBytes: UInt32 = 4 << 20
        /// The most files a pack may hold. Every reader keeps a record of about 100 bytes a file
        /// (and a client a row of its state), so this bounds what one pack can make a device or the
        /// server hold, whatever the index's size.
        public static let fileCount = 1 << 20
        /// The most bytes the paths of a pack's files may hold in all, once decoded. Version 2
        /// front-codes its paths, so an index of 11 bytes a file could otherwise declare a million
        /// 4 KiB paths (4 GB) in 11 MB; this is the largest index, so no version-2 pack holds more
        /// path bytes than a version-1 pack could. Checked before each path is built.
        public static let pathBytes = Int(PackHeader.maximumIndexLength)
        public static let fileSize: UInt64 = 1 << 48
        public static let chunkReferencesPerFile = 1 << 24
        /// The largest zstd dictionary a version-2 index may hold.
        public static let dictionaryBytes = 1 << 20
    }

    /// Decodes an index and checks every rule of the format, so that nothing a reader later
    /// trusts (offsets, sizes, paths) can be out of range, overlapping or outside the target.
    ///
    /// Every count is checked against the bytes left before anything is allocated for it.
    /// - Throws: ``BacklotError/Code/corruptArchive`` naming the rule, the record and its offset.
    public static func decode(_ bytes: [UInt8], header: PackHeader, source: String) throws -> PackIndex {
        try decode(bytes, header: header, source: source, keepingFiles: true)
    }

    /// ``decode(_:header:source:)`` that checks every rule but, unless `keepingFiles`, keeps no
    /// record (the result has no chunks and no files): what `package` runs on the index it wrote,
    /// without a second copy of 200,000 records in memory. Chunk IDs are checked for repeats by
    /// sorting, never with a set (which takes about as much again as the chunk table).
    static func decode(_ bytes: [UInt8], header: PackHeader, source: String, keepingFiles: Bool) throws -> PackIndex {
        var r = ByteReader(bytes, base: header.indexOffset, source: source)
        let compact = header.formatVersion >= 2
        let expectedMagic = compact ? compactMagic : magic
        guard Array(try r.take(8, "the index magic")) == expectedMagic else {
            throw r.fail(
                "the index does not start with \(String(decoding: expectedMagic, as: UTF8.self)), as a pack of format version \(header.formatVersion) must"
            )
        }

        let metaLength = Int(try r.u32("the metadata length"))
        guard metaLength <= Limits.metadataBytes else {
            throw r.fail("the metadata is \(metaLength) bytes; at most \(Limits.metadataBytes) allowed")
        }
        let metaStart = r.offset
        let metaBytes = Array(try r.take(metaLength, "the metadata"))
        let (metadata, chunking) = try decodeMetadata(
            metaBytes, source: "\(source) (index metadata at offset \(header.indexOffset + UInt64(metaStart)))")

        var dictionary: ZstdDictionary? = nil
        if compact {
            let dictionaryLength = Int(try r.u32("the dictionary length"))
            guard dictionaryLength >= ZstdDictionary.minimumSize, dictionaryLength <= Limits.dictionaryBytes else {
                throw r.fail(
                    "the dictionary is \(dictionaryLength) bytes; \(ZstdDictionary.minimumSize)…\(Limits.dictionaryBytes) allowed"
                )
            }
            let dictionaryStart = r.offset
            let dictionaryBytes = Array(try r.take(dictionaryLength, "the dictionary"))
            do {
                dictionary = try ZstdDictionary(bytes: dictionaryBytes)
            } catch let e as BacklotError {
                r.offset = dictionaryStart
                throw r.fail("the dictionary: \(e.message)")
            }
        }

        let chunkRecord = compact ? 40 : 48
        let chunkCount = Int(try r.u32("the chunk count"))
        guard chunkCount <= r.remaining / chunkRecord else {
            throw r.fail(
                "the index declares \(chunkCount) chunks but has room for at most \(r.remaining / chunkRecord)")
        }
        // Kept: every chunk record; checking only: each chunk's size and its ID. A repeated ID is
        // found once all are read, by sorting (the records' numbers, or the IDs themselves).
        let chunksStart = r.offset
        var chunks: [Chunk] = []
        var sizes: [UInt32] = []
        var ids: [SHA256Digest] = []
        if keepingFiles {
            chunks.reserveCapacity(chunkCount)
        } else {
            sizes.reserveCapacity(chunkCount)
            ids.reserveCapacity(chunkCount)
        }
        var expectedOffset = UInt64(PackHeader.size)
        for i in 0..<chunkCount {
            let recordStart = r.offset
            let id = try r.digest("chunk \(i)'s ID")
            // Version 2 stores no offsets: chunks tile the data region, so each is where the previous ends.
            let offset = compact ? expectedOffset : try r.u64("chunk \(i)'s offset")
            let compressed = try r.u32("chunk \(i)'s compressed size")
            let uncompressed = try r.u32("chunk \(i)'s uncompressed size")
            func bad(_ m: String) -> BacklotError {
                r.offset = recordStart
                return r.fail("chunk \(i): \(m)")
            }
            guard uncompressed >= 1, uncompressed <= Limits.chunkBytes else {
                throw bad("uncompressed size \(uncompressed) is outside 1…\(Limits.chunkBytes)")
            }
            guard compressed >= 1, Int(compressed) <= ZstdCompressor.bound(forInputSize: Int(uncompressed)) else {
                throw bad("compressed size \(compressed) is impossible for \(uncompressed) uncompressed bytes")
            }
            guard offset == expectedOffset else {
                throw bad(
                    offset < expectedOffset
                        ? "offset \(offset) overlaps the previous chunk (which ends at \(expectedOffset))"
                        : "offset \(offset) leaves a gap after the previous chunk (which ends at \(expectedOffset))")
            }
            expectedOffset += UInt64(compressed)
            guard expectedOffset <= header.indexOffset else {
                throw bad("ends at \(expectedOffset), past the start of the index (\(header.indexOffset))")
            }
            if keepingFiles {
                chunks.append(
                    Chunk(id: id, offset: offset, compressedSize: compressed, uncompressedSize: uncompressed))
            } else {
                sizes.append(uncompressed)
                ids.append(id)
            }
        }
        if keepingFiles {
            if let i = firstRepeatedID(chunks) {
                r.offset = chunksStart + i * chunkRecord
                throw r.fail("chunk \(i): ID \(chunks[i].id.short)… appears twice")
            }
        } else {
            ids.sort()
            if let i = ids.indices.dropFirst().first(where: { ids[$0] == ids[$0 - 1] }) {
                throw r.fail("chunk ID \(ids[i].short)… appears twice")
            }
            ids = []
        }
        guard expectedOffset == header.indexOffset else {
            throw r.fail("the chunks end at \(expectedOffset) but the index starts at \(header.indexOffset)")
        }

        // The smallest file record: version 1 (length, a 1-byte path, mode, size, SHA-256, count)
        // 51 bytes; version 2 (shared length, suffix length, a 1-byte suffix, mode, count) 11.
        let smallestFile = compact ? 11 : 51
        let fileCount = Int(try r.u32("the file count"))
        guard fileCount <= Limits.fileCount else {
            throw BacklotError(
                .corruptArchive,
                "the index declares \(fileCount) files; a pack may hold at most \(Limits.fileCount) (docs/format.md §10)",
                context: "\(source) at offset \(header.indexOffset + UInt64(r.offset - 4))",
                hint:
                    "the pack was not made by this version of Backlot, or was crafted: package the content as several packs"
            )
        }
        guard fileCount <= r.remaining / smallestFile else {
            throw r.fail("the index declares \(fileCount) files but has room for at most \(r.remaining / smallestFile)")
        }
        var files = FileTable()
        if keepingFiles { files.reserveCapacity(fileCount) }
        var referenced = [Bool](repeating: false, count: chunkCount)
        let emptyDigest = SHA256.hash([UInt8]())
        // The current path's bytes, and the previous one's.
        var path: [UInt8] = []
        var previous: [UInt8] = []
        path.reserveCapacity(4096)
        previous.reserveCapacity(4096)
        // Paths come in byte order, so a file that is an ancestor folder of a later path ("a"
        // before "a.txt" before "a/b") is always a prefix of every path between them: the stack
        // holds the lengths of the earlier paths that are prefixes of the current one, and is
        // checked and trimmed in time proportional to the path, with no set of every path.
        var prefixes: [Int] = []
        // The bytes of the paths decoded so far, checked against the limit before each is built.
        var decodedPathBytes = 0
        for i in 0..<fileCount {
            let recordStart = r.offset
            func bad(_ m: String) -> BacklotError {
                r.offset = recordStart
                return r.fail("file \(i): \(m)")
            }
            swap(&path, &previous)
            let common: Int
            if compact {
                // Front coding: the bytes shared with the previous path, then the rest.
                let shared = Int(try r.u16("file \(i)'s shared path length"))
                let suffixLength = Int(try r.u16("file \(i)'s path suffix length"))
                let suffix = try r.take(suffixLength, "file \(i)'s path suffix")
                guard shared <= previous.count else {
                    throw bad("shares \(shared) bytes with the previous path, which has \(previous.count)")
                }
                guard suffixLength >= 1, shared + suffixLength <= 4096 else {
                    throw bad("path length \(shared + suffixLength) is outside 1…4096 or repeats the previous path")
                }
                decodedPathBytes += shared + suffixLength
                guard decodedPathBytes <= Limits.pathBytes else { throw pathBytesExceeded(decodedPathBytes, bad) }
                // Canonical: the shared length is the whole common prefix (one encoding per index).
                guard shared == previous.count || suffix.first! != previous[shared] else {
                    throw bad("shares \(shared) bytes with the previous path, but they have more in common")
                }
                path.removeAll(keepingCapacity: true)
                path += previous[0..<shared]
                path += suffix
                common = shared
            } else {
                let pathLength = Int(try r.u16("file \(i)'s path length"))
                let pathBytes = try r.take(pathLength, "file \(i)'s path")
                guard pathLength >= 1, pathLength <= 4096 else {
                    throw bad("path length \(pathLength) is outside 1…4096")
                }
                decodedPathBytes += pathLength
                guard decodedPathBytes <= Limits.pathBytes else { throw pathBytesExceeded(decodedPathBytes, bad) }
                path.removeAll(keepingCapacity: true)
                path += pathBytes
                common = PackIndex.sharedPrefix(path, previous)
            }
            guard let text = String(validating: path, as: UTF8.self) else {
                throw bad("the path is not valid UTF-8")
            }
            if !SelectorPath.isNormalFilePath(path) {
                if case .failure(let problem) = SelectorPath.normalize(text, allowRoot: false) {
                    throw bad("unsafe path \"\(text)\": \(problem.message)")
                }
                throw bad("the path \"\(text)\" is not in normal form")
            }
            if i > 0 {
                // Ordered by bytes: after the common prefix, the current path has the larger byte
                // (or goes on where the previous one ends).
                guard common < path.count, common == previous.count || path[common] > previous[common] else {
                    throw bad(
                        common == path.count && common == previous.count
                            ? "the path \"\(text)\" appears twice" : "the path \"\(text)\" is out of order")
                }
            }
            while let top = prefixes.last, top > common { prefixes.removeLast() }
            for p in prefixes where path[p] == UInt8(ascii: "/") {
                throw bad("\"\(text)\" lies under \"\(String(decoding: path[0..<p], as: UTF8.self))\", which is a file")
            }
            prefixes.append(path.count)
            let mode = compact ? UInt32(try r.u16("file \(i)'s mode")) : try r.u32("file \(i)'s mode")
            guard mode == 0o644 || mode == 0o755 else { throw bad("mode \(String(mode, radix: 8)) is not 644 or 755") }
            // Version 2 stores no size (it is the sum of the chunks') and a SHA-256 only for a
            // file of two chunks or more (an empty file's is that of no bytes, a one-chunk
            // file's is its chunk's ID).
            let declaredSize = compact ? nil : try r.u64("file \(i)'s size")
            if let declaredSize, declaredSize > Limits.fileSize {
                throw bad("size \(declaredSize) exceeds the limit of \(Limits.fileSize)")
            }
            let declaredDigest = compact ? nil : try r.digest("file \(i)'s SHA-256")
            let refCount = Int(try r.u32("file \(i)'s chunk count"))
            guard refCount <= Limits.chunkReferencesPerFile, refCount <= r.remaining / 4 else {
                throw bad("declares \(refCount) chunk references but the index has room for \(r.remaining / 4)")
            }
            var refs: [Int] = []
            if keepingFiles { refs.reserveCapacity(refCount) }
            var total: UInt64 = 0
            for _ in 0..<refCount {
                let ref = Int(try r.u32("file \(i)'s chunk reference"))
                guard ref < chunkCount else { throw bad("refers to chunk \(ref), but there are \(chunkCount)") }
                referenced[ref] = true
                total += UInt64(keepingFiles ? chunks[ref].uncompressedSize : sizes[ref])
                if keepingFiles || refs.isEmpty { refs.append(ref) }
            }
            guard total <= Limits.fileSize else {
                throw bad("its chunks hold \(total) bytes, over the limit of \(Limits.fileSize)")
            }
            if let declaredSize, total != declaredSize {
                throw bad("declares \(declaredSize) bytes but its chunks hold \(total)")
            }
            let digest =
                if let declaredDigest { declaredDigest } else if refCount >= 2 {
                    try r.digest("file \(i)'s SHA-256")
                } else if refCount == 1, keepingFiles { chunks[refs[0]].id } else { emptyDigest }
            if keepingFiles { files.append(path: path, mode: mode, size: total, digest: digest, chunks: refs) }
        }
        guard r.remaining == 0 else { throw r.fail("\(r.remaining) unexpected bytes after the last file record") }
        if let unused = referenced.firstIndex(of: false) {
            throw BacklotError(
                .corruptArchive, "chunk \(unused) is not used by any file", context: source,
                hint: "the pack is damaged or crafted: package it again")
        }
        files.trimCapacity()
        return PackIndex(metadata: metadata, chunking: chunking, chunks: chunks, files: files, dictionary: dictionary)
    }

    /// The number of the first chunk whose ID an earlier chunk already has (the one a set of the
    /// IDs seen would stop at), found by sorting the chunks' numbers by ID: 4 bytes a chunk, where
    /// a set takes 32 and more (4 MB for the 65,536 chunks of a 4 GiB pack).
    static func firstRepeatedID(_ chunks: [Chunk]) -> Int? {
        guard let count = UInt32(exactly: chunks.count), count > 1 else { return nil }
        var order = Array(0..<count)
        order.sort { a, b in
            let (x, y) = (chunks[Int(a)].id, chunks[Int(b)].id)
            return x < y || (x == y && a < b)
        }
        var first: Int? = nil
        for k in order.indices.dropFirst() where chunks[Int(order[k])].id == chunks[Int(order[k - 1])].id {
            first = min(first ?? Int(order[k]), Int(order[k]))
        }
        return first
    }

    /// The error for paths that hold more than ``Limits/pathBytes`` once decoded.
    private static func pathBytesExceeded(_ total: Int, _ bad: (String) -> BacklotError) -> BacklotError {
        let e = bad(
            "the paths decoded so far hold \(total) bytes; a pack's paths may hold at most \(Limits.pathBytes) in all (docs/format.md §10)"
        )
        return BacklotError(
            e.code, e.message, context: e.context,
            hint:
                "the pack was crafted or is not of this version of Backlot: package the content as several packs, or use shorter paths"
        )
    }

    static func decodeMetadata(
        _ bytes: [UInt8], source: String
    ) throws -> (PackMetadata, (minimum: Int, average: Int, maximum: Int)?) {
        let root: JSONNode
        do {
            root = try JSONReader(source: source, allowsComments: false, allowsTrailingCommas: false, maximumDepth: 64)
                .read(bytes).root
        } catch let e as BacklotError {
            throw BacklotError(
                .corruptArchive, "the index metadata is not valid JSON: \(e.message)", context: e.context)
        }
        guard let manifest = root["manifest"], manifest.objectMembers != nil else {
            throw BacklotError(.corruptArchive, "the index metadata has no \"manifest\" object", context: source)
        }
        let metadata = try PackMetadata(json: manifest, source: source, what: "the index metadata")
        var chunking: (Int, Int, Int)? = nil
        if let c = root["chunking"], case .number(let mn)? = c["min"]?.kind, case .number(let av)? = c["avg"]?.kind,
            case .number(let mx)? = c["max"]?.kind,
            let a = Int(mn), let b = Int(av), let d = Int(mx)
        {
            chunking = (a, b, d)
        }
        return (metadata, chunking)
    }
}
