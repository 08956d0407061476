import BacklotCrypto
import BacklotJSON

extension PackIndex {
    /// `BKLTINDX`: the start of a version-1 index.
    public static let magic: [UInt8] = Array("BKLTINDX".utf8)
    /// `BKLTIDX2`: the start of a version-2 index. The index says its own layout, so its bytes
    /// (which its digest, the pack's identity, covers) mean one thing whatever the header says.
    public static let compactMagic: [UInt8] = Array("BKLTIDX2".utf8)

    /// The format version of index `bytes`, by their magic; nil when they start with neither.
    public static func formatVersion(ofIndex bytes: [UInt8]) -> UInt16? {
        if bytes.starts(with: magic) { return 1 }
        if bytes.starts(with: compactMagic) { return 2 }
        return nil
    }

    /// The index bytes, exactly as stored in a pack: version 1's layout without a dictionary,
    /// version 2's (the dictionary, no chunk offsets, paths front-coded, no sizes, SHA-256s only
    /// for files of two chunks or more) with one (`docs/format.md` §3).
    public var encoded: [UInt8] {
        var encoder = PackIndexEncoder(
            metadata: metadataJSON, chunks: chunks, dictionary: dictionary, fileCount: files.count,
            pathBytes: files.reduce(0) { $0 + $1.path.utf8.count },
            references: files.reduce(0) { $0 + $1.chunks.count })
        for f in files { encoder.add(path: f.path, mode: f.mode, size: f.size, digest: f.digest, chunks: f.chunks) }
        return encoder.bytes
    }

    /// The metadata section: `{"chunking":{…},"manifest":{…}}`.
    var metadataJSON: JSONNode { Self.metadataJSON(metadata, chunking: chunking) }

    /// The metadata section of an index with `metadata` and `chunking`.
    static func metadataJSON(
        _ metadata: PackMetadata, chunking: (minimum: Int, average: Int, maximum: Int)?
    ) -> JSONNode {
        // Members written in UTF-8 key order; userInfo inside the manifest keeps its own order.
        var members: [JSONMember] = []
        if let chunking {
            members.append(
                JSONMember(
                    key: "chunking",
                    value: JSONNode(
                        .object([
                            JSONMember(key: "avg", value: JSONNode(.number(String(chunking.average)))),
                            JSONMember(key: "max", value: JSONNode(.number(String(chunking.maximum)))),
                            JSONMember(key: "min", value: JSONNode(.number(String(chunking.minimum)))),
                        ]))))
        }
        members.append(JSONMember(key: "manifest", value: metadata.json))
        return JSONNode(.object(members))
    }
}
