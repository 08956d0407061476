import BacklotBasics
import BacklotCrypto
import BacklotJSON
import BacklotZstd

/// A pack's index: its metadata, chunk table and file table (`docs/format.md` §3).
///
/// The index is everything a client needs to decide what to download: which chunks a file is made
/// of, where each chunk lies in the pack, and the SHA-256 that each chunk and file must have.
public struct PackIndex: Sendable, Hashable {
    /// One zstd frame in the pack.
    public struct Chunk: Sendable, Hashable {
        /// SHA-256 of the uncompressed bytes.
        public let id: SHA256Digest
        /// Where the frame starts in the pack.
        public let offset: UInt64
        public let compressedSize: UInt32
        public let uncompressedSize: UInt32

        public init(id: SHA256Digest, offset: UInt64, compressedSize: UInt32, uncompressedSize: UInt32) {
            self.id = id
            self.offset = offset
            self.compressedSize = compressedSize
            self.uncompressedSize = uncompressedSize
        }

        /// The byte range of the frame in the pack.
        public var range: Range<UInt64> { offset..<offset + UInt64(compressedSize) }
    }

    /// One file of the pack.
    public struct File: Sendable, Hashable {
        /// The relative path, `/`-separated.
        public let path: String
        /// `0o644` or `0o755`.
        public let mode: UInt32
        public let size: UInt64
        /// SHA-256 of the whole file.
        public let digest: SHA256Digest
        /// Indexes into ``PackIndex/chunks``, in file order.
        public let chunks: ChunkList

        public init(path: String, mode: UInt32, size: UInt64, digest: SHA256Digest, chunks: [Int]) {
            self.init(path: path, mode: mode, size: size, digest: digest, chunks: ChunkList(chunks))
        }

        public init(path: String, mode: UInt32, size: UInt64, digest: SHA256Digest, chunks: ChunkList) {
            self.path = path
            self.mode = mode
            self.size = size
            self.digest = digest
            self.chunks = chunks
        }
    }

    /// The normalised manifest: ID, policy, platforms, userInfo, language.
    public let metadata: PackMetadata
    /// The chunk sizes the pack was cut with (informative).
    public let chunking: (minimum: Int, average: Int, maximum: Int)?
    public let chunks: [Chunk]
    /// The files, in path byte order (held by column: ``FileTable``).
    public let files: FileTable
    /// The zstd dictionary every chunk's frame is decoded with (`docs/format.md` §5), or nil.
    /// A pack with one is of format version 2, a pack without one of version 1.
    public let dictionary: ZstdDictionary?

    public init(
        metadata: PackMetadata, chunking: (minimum: Int, average: Int, maximum: Int)?, chunks: [Chunk], files: [File],
        dictionary: ZstdDictionary? = nil
    ) {
        self.init(
            metadata: metadata, chunking: chunking, chunks: chunks, files: FileTable(files), dictionary: dictionary)
    }

    public init(
        metadata: PackMetadata, chunking: (minimum: Int, average: Int, maximum: Int)?, chunks: [Chunk],
        files: FileTable, dictionary: ZstdDictionary? = nil
    ) {
        self.metadata = metadata
        self.chunking = chunking
        self.chunks = chunks
        self.files = files
        self.dictionary = dictionary
    }

    /// The format version the index is encoded in: 2 with a dictionary, 1 without.
    public var formatVersion: UInt16 { dictionary == nil ? 1 : 2 }

    public static func == (a: PackIndex, b: PackIndex) -> Bool {
        a.metadata == b.metadata && a.chunks == b.chunks && a.files == b.files && a.dictionary == b.dictionary
            && a.chunking?.minimum == b.chunking?.minimum && a.chunking?.average == b.chunking?.average
            && a.chunking?.maximum == b.chunking?.maximum
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(metadata)
        hasher.combine(chunks)
        hasher.combine(files)
        hasher.combine(dictionary)
    }

    /// Total uncompressed size of the files (the install size).
    public var installSize: UInt64 { files.totalSize }
    /// Total compressed size of the chunks.
    public var chunkBytes: UInt64 { chunks.reduce(0) { $0 + UInt64($1.compressedSize) } }
}

extension PackIndex {
    /// How many leading bytes two paths share: what a version-2 file record front-codes against
    /// the previous path (docs/format.md §3.1), for the encoder and the decoder alike.
    static func sharedPrefix(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                let n = min(a.count, b.count)
                var i = 0
                while i < n && a[i] == b[i] { i += 1 }
                return i
            }
        }
    }
}

extension PackIndex.File {
    /// Refuses the file when the SHA-256 of the bytes assembled for it (each from a verified
    /// chunk) is not the index's: every path that makes files visible (extract, install, repair)
    /// checks every file hash first.
    /// - Throws: ``BacklotError/Code/corruptArchive`` naming the file.
    public func check(_ assembled: SHA256Digest, source: String) throws {
        guard assembled == digest else {
            throw BacklotError(
                .corruptArchive, "the file's SHA-256 is \(assembled.short)…, but the index says \(digest.short)…",
                context: "\(source): file \"\(path)\"", hint: "the pack is damaged or crafted: package it again")
        }
    }
}

/// The normalised manifest a pack carries (what a catalog lists about it).
public struct PackMetadata: Sendable, Hashable {
    public let assetPackID: PackID
    public let downloadPolicy: DownloadPolicy
    public let platforms: [Platform]
    /// The manifest's `userInfo`, verbatim.
    public let userInfo: JSONNode?
    public let language: String?
    /// The texture formats and device tiers its files come in (`docs/format.md` §3.2); nil for a
    /// pack whose every file is for every device.
    public let variants: PackVariants?

    public init(
        assetPackID: PackID, downloadPolicy: DownloadPolicy, platforms: [Platform], userInfo: JSONNode?,
        language: String?, variants: PackVariants? = nil
    ) {
        self.assetPackID = assetPackID
        self.downloadPolicy = downloadPolicy
        self.platforms = platforms
        self.userInfo = userInfo
        self.language = language
        self.variants = variants?.isEmpty == true ? nil : variants
    }

    /// The metadata of a pack made from `manifest`, with the `variants` its selected files have
    /// (``SourceSelection/variants``).
    public init(_ manifest: PackManifest, variants: PackVariants? = nil) {
        self.init(
            assetPackID: manifest.assetPackID, downloadPolicy: manifest.downloadPolicy, platforms: manifest.platforms,
            userInfo: manifest.userInfo, language: manifest.language, variants: variants)
    }

    /// The metadata as the canonical manifest JSON stored in the index: the normalised manifest,
    /// then `variants` (last in UTF-8 key order) when the pack has some.
    public var json: JSONNode {
        let manifest = PackManifest(
            assetPackID: assetPackID, downloadPolicy: downloadPolicy, fileSelectors: [], platforms: platforms,
            userInfo: userInfo, language: language
        ).normalizedJSON
        guard let variants, var members = manifest.objectMembers else { return manifest }
        members.append(JSONMember(key: "variants", value: variants.json))
        return JSONNode(.object(members))
    }
}
