import BacklotBasics
import BacklotCrypto
import BacklotJSON
import BacklotZstd

extension PackIndex {
    /// The format's limits (`docs/format.md` §10).
    public enum Limits {
        public static let metadataBytes = 1 << 20
        public static let chunkBytes: UInt32 = 4 << 20
        public static let fileCount = 1 << 24
        public static let fileSize: UInt64 = 1 << 48
        public static let chunkReferencesPerFile = 1 << 24
    }

    /// Decodes an index and checks every rule of the format, so that nothing a reader later
    /// trusts (offsets, sizes, paths) can be out of range, overlapping or outside the target.
    ///
    /// Every count is checked against the bytes left before anything is allocated for it.
    /// - Throws: ``BacklotError/Code/corruptArchive`` naming the rule, the record and its offset.
    public static func decode(_ bytes: [UInt8], header: PackHeader, source: String) throws -> PackIndex {
        var r = ByteReader(bytes, base: header.indexOffset, source: source)
        guard Array(try r.take(8, "the index magic")) == magic else {
            throw r.fail("the index does not start with BKLTINDX")
        }

        let metaLength = Int(try r.u32("the metadata length"))
        guard metaLength <= Limits.metadataBytes else {
            throw r.fail("the metadata is \(metaLength) bytes; at most \(Limits.metadataBytes) allowed")
        }
        let metaStart = r.offset
        let metaBytes = Array(try r.take(metaLength, "the metadata"))
        let (metadata, chunking) = try decodeMetadata(
            metaBytes, source: "\(source) (index metadata at offset \(header.indexOffset + UInt64(metaStart)))")

        let chunkCount = Int(try r.u32("the chunk count"))
        guard chunkCount <= r.remaining / 48 else {
            throw r.fail("the index declares \(chunkCount) chunks but has room for at most \(r.remaining / 48)")
        }
        var chunks: [Chunk] = []
        chunks.reserveCapacity(chunkCount)
        var seen = Set<SHA256Digest>(minimumCapacity: chunkCount)
        var expectedOffset = UInt64(PackHeader.size)
        for i in 0..<chunkCount {
            let recordStart = r.offset
            let id = try r.digest("chunk \(i)'s ID")
            let offset = try r.u64("chunk \(i)'s offset")
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
            guard seen.insert(id).inserted else { throw bad("ID \(id.short)… appears twice") }
            expectedOffset += UInt64(compressed)
            guard expectedOffset <= header.indexOffset else {
                throw bad("ends at \(expectedOffset), past the start of the index (\(header.indexOffset))")
            }
            chunks.append(Chunk(id: id, offset: offset, compressedSize: compressed, uncompressedSize: uncompressed))
        }
        guard expectedOffset == header.indexOffset else {
            throw r.fail("the chunks end at \(expectedOffset) but the index starts at \(header.indexOffset)")
        }

        let fileCount = Int(try r.u32("the file count"))
        guard fileCount <= Limits.fileCount, fileCount <= r.remaining / 51 else {
            throw r.fail(
                "the index declares \(fileCount) files but has room for at most \(min(Limits.fileCount, r.remaining / 51))"
            )
        }
        var files: [File] = []
        files.reserveCapacity(fileCount)
        var referenced = [Bool](repeating: false, count: chunkCount)
        // Paths come in byte order, so a file that is an ancestor folder of a later path ("a"
        // before "a.txt" before "a/b") is always a prefix of every path between them: the stack
        // holds the earlier paths that are prefixes of the current one, and is checked and
        // trimmed in time proportional to the path, with no set of every path.
        var prefixes: [Range<Int>] = []
        var previous: Range<Int>? = nil
        for i in 0..<fileCount {
            let recordStart = r.offset
            let pathLength = Int(try r.u16("file \(i)'s path length"))
            let pathRange = r.offset..<(r.offset + pathLength)
            let pathBytes = try r.take(pathLength, "file \(i)'s path")
            func bad(_ m: String) -> BacklotError {
                r.offset = recordStart
                return r.fail("file \(i): \(m)")
            }
            guard pathLength >= 1, pathLength <= 4096 else { throw bad("path length \(pathLength) is outside 1…4096") }
            guard let path = String(validating: pathBytes, as: UTF8.self) else {
                throw bad("the path is not valid UTF-8")
            }
            if !SelectorPath.isNormalFilePath(pathBytes) {
                if case .failure(let problem) = SelectorPath.normalize(path, allowRoot: false) {
                    throw bad("unsafe path \"\(path)\": \(problem.message)")
                }
                throw bad("the path \"\(path)\" is not in normal form")
            }
            try bytes.withUnsafeBufferPointer { all in
                let current = UnsafeBufferPointer(rebasing: all[pathRange])
                if let previous {
                    let before = UnsafeBufferPointer(rebasing: all[previous])
                    guard before.lexicographicallyPrecedes(current) else {
                        throw bad(
                            before.elementsEqual(current)
                                ? "the path \"\(path)\" appears twice" : "the path \"\(path)\" is out of order")
                    }
                }
                while let top = prefixes.last, !current.starts(with: UnsafeBufferPointer(rebasing: all[top])) {
                    prefixes.removeLast()
                }
                for p in prefixes where current[p.count] == UInt8(ascii: "/") {
                    throw bad(
                        "\"\(path)\" lies under \"\(String(decoding: UnsafeBufferPointer(rebasing: all[p]), as: UTF8.self))\", which is a file"
                    )
                }
            }
            prefixes.append(pathRange)
            previous = pathRange
            let mode = try r.u32("file \(i)'s mode")
            guard mode == 0o644 || mode == 0o755 else { throw bad("mode \(String(mode, radix: 8)) is not 644 or 755") }
            let size = try r.u64("file \(i)'s size")
            guard size <= Limits.fileSize else { throw bad("size \(size) exceeds the limit of \(Limits.fileSize)") }
            let digest = try r.digest("file \(i)'s SHA-256")
            let refCount = Int(try r.u32("file \(i)'s chunk count"))
            guard refCount <= Limits.chunkReferencesPerFile, refCount <= r.remaining / 4 else {
                throw bad("declares \(refCount) chunk references but the index has room for \(r.remaining / 4)")
            }
            var refs: [Int] = []
            refs.reserveCapacity(refCount)
            var total: UInt64 = 0
            for _ in 0..<refCount {
                let ref = Int(try r.u32("file \(i)'s chunk reference"))
                guard ref < chunkCount else { throw bad("refers to chunk \(ref), but there are \(chunkCount)") }
                referenced[ref] = true
                total += UInt64(chunks[ref].uncompressedSize)
                refs.append(ref)
            }
            guard total == size else { throw bad("declares \(size) bytes but its chunks hold \(total)") }
            files.append(File(path: path, mode: mode, size: size, digest: digest, chunks: refs))
        }
        guard r.remaining == 0 else { throw r.fail("\(r.remaining) unexpected bytes after the last file record") }
        if let unused = referenced.firstIndex(of: false) {
            throw BacklotError(
                .corruptArchive, "chunk \(unused) is not used by any file", context: source,
                hint: "the pack is damaged or crafted: package it again")
        }
        return PackIndex(metadata: metadata, chunking: chunking, chunks: chunks, files: files)
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
        var checker = ManifestChecker()
        let id = checker.checkPackID(manifest)
        let policy = checker.checkPolicy(manifest)
        let platforms = checker.checkPlatforms(manifest)
        let language = checker.checkLanguage(manifest)
        guard let id, let policy, let platforms, !checker.hasErrors else {
            let first = checker.diagnostics.first { $0.severity == .error }
            throw BacklotError(
                .corruptArchive,
                "the index metadata's manifest is invalid: \(first.map { "\($0.jsonPath): \($0.message)" } ?? "")",
                context: source)
        }
        var chunking: (Int, Int, Int)? = nil
        if let c = root["chunking"], case .number(let mn)? = c["min"]?.kind, case .number(let av)? = c["avg"]?.kind,
            case .number(let mx)? = c["max"]?.kind,
            let a = Int(mn), let b = Int(av), let d = Int(mx)
        {
            chunking = (a, b, d)
        }
        let metadata = PackMetadata(
            assetPackID: id, downloadPolicy: policy, platforms: platforms, userInfo: manifest["userInfo"],
            language: language)
        return (metadata, chunking)
    }
}
