import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotProtocol
import BacklotRepository
import BacklotZstd
import Foundation

/// Writes packs the way an attacker would: any path, any digest, chunks shared or not, with
/// none of the writer's checks, so that tests can prove each reader refuses what it must.
///
/// ```swift
/// let pack = try CraftedPack(files: [.init(path: "../\u{301}evil", bytes: [1, 2, 3])]).bytes
/// ```
public struct CraftedPack: Sendable {
    /// One file: its path (used verbatim), contents, mode, and optionally a false digest.
    public struct File: Sendable {
        public var path: String
        public var bytes: [UInt8]
        public var mode: UInt32
        /// The digest written in the index; the true SHA-256 of `bytes` when nil.
        public var digest: SHA256Digest?

        public init(path: String, bytes: [UInt8], mode: UInt32 = 0o644, digest: SHA256Digest? = nil) {
            self.path = path
            self.bytes = bytes
            self.mode = mode
            self.digest = digest
        }
    }

    public let index: PackIndex
    public let header: PackHeader
    /// The whole archive.
    public let bytes: [UInt8]

    /// Builds the pack: one chunk per distinct file content (empty files have none), files in the
    /// order given unless `sorted` (by bytes, as a valid pack has them). With a `dictionary`, the
    /// frames are compressed against it and the pack is of format version 2 (where a file of one
    /// chunk or none has no digest of its own: a false `digest` only shows in larger files).
    public init(
        id: String = "Crafted", files: [File], sorted: Bool = true, chunkSize: Int = 64 << 10,
        dictionary: ZstdDictionary? = nil, variants: PackVariants? = nil
    ) throws {
        let ordered = sorted ? files.sorted { BytePath.precedes($0.path, $1.path) } : files
        var chunks: [PackIndex.Chunk] = []
        var frames: [UInt8] = []
        var byDigest: [SHA256Digest: Int] = [:]
        var entries: [PackIndex.File] = []
        let compressor = ZstdCompressor(level: 3, dictionary: dictionary)
        for file in ordered {
            var refs: [Int] = []
            var start = 0
            while start < file.bytes.count {
                let piece = Array(file.bytes[start..<min(file.bytes.count, start + chunkSize)])
                start += piece.count
                let id = SHA256.hash(piece)
                if let existing = byDigest[id] {
                    refs.append(existing)
                    continue
                }
                let frame = try piece.withUnsafeBytes { try compressor.compress($0) }
                byDigest[id] = chunks.count
                refs.append(chunks.count)
                chunks.append(
                    PackIndex.Chunk(
                        id: id, offset: UInt64(PackHeader.size + frames.count),
                        compressedSize: UInt32(frame.count), uncompressedSize: UInt32(piece.count)))
                frames += frame
            }
            entries.append(
                PackIndex.File(
                    path: file.path, mode: file.mode, size: UInt64(file.bytes.count),
                    digest: file.digest ?? SHA256.hash(file.bytes), chunks: refs))
        }
        let metadata = PackMetadata(
            assetPackID: try PackID(id), downloadPolicy: .onDemand, platforms: [.linux], userInfo: nil, language: nil,
            variants: variants)
        index = PackIndex(metadata: metadata, chunking: nil, chunks: chunks, files: entries, dictionary: dictionary)
        let indexBytes = index.encoded
        header = PackHeader(
            formatVersion: index.formatVersion, indexOffset: UInt64(PackHeader.size + frames.count),
            indexLength: UInt64(indexBytes.count), indexDigest: SHA256.hash(indexBytes))
        bytes = header.encoded + frames + indexBytes
    }

    /// Writes the archive to `path`.
    public func write(to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }
}

extension ClientFixture {
    /// Publishes `pack` on `channel` as a hostile or broken server would: the archive is put in
    /// the tree as is (no processing, no verification) and a catalog naming it is signed with the
    /// repository's key, with a version above the current one.
    public func publishCrafted(
        _ pack: CraftedPack, id: String = "Crafted", version: Int = 1, channel: Channel = .internal,
        catalogVersion: UInt64? = nil, archiveURL: String? = nil
    ) throws {
        let sha = SHA256.hash(pack.bytes)
        let file = PublishedTreeLayout.pack(sha256: sha.hex)
        try FileManager.default.createDirectory(
            atPath: repository.directory.publicTreePath + "/" + PublishedTreeLayout.packsFolder,
            withIntermediateDirectories: true)
        try Data(pack.bytes).write(to: URL(fileURLWithPath: repository.directory.publicTreePath + "/" + file.path))
        let release = Catalog.Release(
            version: version, downloadPolicy: .onDemand, platforms: [.linux], userInfo: nil, language: nil,
            installSize: pack.index.installSize, archiveURL: archiveURL ?? file.referenceFromCatalog,
            archiveSize: UInt64(pack.bytes.count), archiveSHA256: sha,
            indexOffset: pack.header.indexOffset, indexLength: pack.header.indexLength,
            indexSHA256: pack.header.indexDigest)
        try publishCatalog(
            Catalog(
                app: app, channel: channel, version: catalogVersion ?? UInt64(Date().timeIntervalSince1970) + 1000,
                issued: Date(), expires: Date().addingTimeInterval(86_400),
                packs: [Catalog.Entry(id: try PackID(id), release: release)]), channel: channel)
    }

    /// Signs `catalog` with the repository's key and writes it where the tree serves the channel's catalog.
    public func publishCatalog(_ catalog: Catalog, channel: Channel = .internal, payload: [UInt8]? = nil) throws {
        let envelope = try SignedEnvelope.sign(
            payload: payload ?? catalog.payload, type: Catalog.payloadType,
            with: [try repository.directory.signingKey()])
        let path = repository.publication.catalogPath(app: app, channel: channel)
        try FileManager.default.createDirectory(
            atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path, withIntermediateDirectories: true)
        try Data(envelope.encoded).write(to: URL(fileURLWithPath: path))
    }
}

extension CraftedPack {
    /// The bytes of the zero chunk ``repeatedChunk(id:references:correctDigest:)`` repeats.
    public static let chunkSize = 4 << 20

    /// A valid pack that is expensive to process: one 4 MiB chunk of zeros (a few hundred bytes
    /// compressed) that the file `big.bin` refers to `references` times, so that a tiny archive
    /// declares gigabytes.
    /// - Parameter correctDigest: compute the file's real SHA-256 (hashing references × 4 MiB);
    ///   otherwise the file's digest is wrong, which only a processing that gets that far finds.
    public static func repeatedChunk(id: String, references: Int, correctDigest: Bool) throws -> [UInt8] {
        let zeros = [UInt8](repeating: 0, count: chunkSize)
        let frame = try ZstdCompressor(level: 3).compress(zeros)
        let chunk = PackIndex.Chunk(
            id: SHA256.hash(zeros), offset: UInt64(PackHeader.size), compressedSize: UInt32(frame.count),
            uncompressedSize: UInt32(chunkSize))
        var digest = SHA256.hash([1])
        if correctDigest {
            var hasher = SHA256()
            for _ in 0..<references { hasher.update(zeros) }
            digest = hasher.finalize()
        }
        let file = PackIndex.File(
            path: "big.bin", mode: 0o644, size: UInt64(references) * UInt64(chunkSize), digest: digest,
            chunks: [Int](repeating: 0, count: references))
        let metadata = PackMetadata(
            assetPackID: try PackID(id), downloadPolicy: .onDemand, platforms: [.linux], userInfo: nil, language: nil)
        let index = PackIndex(metadata: metadata, chunking: nil, chunks: [chunk], files: [file]).encoded
        let header = PackHeader(
            indexOffset: UInt64(PackHeader.size + frame.count), indexLength: UInt64(index.count),
            indexDigest: SHA256.hash(index))
        return header.encoded + frame + index
    }
}
