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
        let compact = dictionary != nil
        var w = ByteWriter()
        w.reserve(
            64 + (dictionary?.bytes.count ?? 0) + chunks.count * 48
                + files.reduce(0) { $0 + 50 + $1.path.utf8.count + 4 * $1.chunks.count })
        w.append(compact ? PackIndex.compactMagic : PackIndex.magic)
        let meta = Array(metadataJSON.serialized().utf8)
        w.u32(UInt32(meta.count))
        w.append(meta)
        if let dictionary {
            w.u32(UInt32(dictionary.bytes.count))
            w.append(dictionary.bytes)
        }
        w.u32(UInt32(chunks.count))
        for c in chunks {
            w.digest(c.id)
            if !compact { w.u64(c.offset) }
            w.u32(c.compressedSize)
            w.u32(c.uncompressedSize)
        }
        w.u32(UInt32(files.count))
        var previous: [UInt8] = []
        for f in files {
            let path = Array(f.path.utf8)
            if compact {
                let shared = zip(path, previous).prefix { $0 == $1 }.count
                w.u16(UInt16(shared))
                w.u16(UInt16(path.count - shared))
                w.append(path[shared...])
                w.u16(UInt16(f.mode))
                w.u32(UInt32(f.chunks.count))
                for i in f.chunks { w.u32(UInt32(i)) }
                if f.chunks.count >= 2 { w.digest(f.digest) }
                previous = path
            } else {
                w.u16(UInt16(path.count))
                w.append(path)
                w.u32(f.mode)
                w.u64(f.size)
                w.digest(f.digest)
                w.u32(UInt32(f.chunks.count))
                for i in f.chunks { w.u32(UInt32(i)) }
            }
        }
        return w.bytes
    }

    /// The metadata section: `{"chunking":{…},"manifest":{…}}`.
    var metadataJSON: JSONNode {
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
