import BacklotCrypto
import BacklotJSON

extension PackIndex {
    /// `BKLTINDX`.
    public static let magic: [UInt8] = Array("BKLTINDX".utf8)

    /// The index bytes, exactly as stored in a pack.
    public var encoded: [UInt8] {
        var w = ByteWriter()
        w.reserve(64 + chunks.count * 48 + files.reduce(0) { $0 + 50 + $1.path.utf8.count + 4 * $1.chunks.count })
        w.append(PackIndex.magic)
        let meta = Array(metadataJSON.serialized().utf8)
        w.u32(UInt32(meta.count))
        w.append(meta)
        w.u32(UInt32(chunks.count))
        for c in chunks {
            w.digest(c.id)
            w.u64(c.offset)
            w.u32(c.compressedSize)
            w.u32(c.uncompressedSize)
        }
        w.u32(UInt32(files.count))
        for f in files {
            let path = Array(f.path.utf8)
            w.u16(UInt16(path.count))
            w.append(path)
            w.u32(f.mode)
            w.u64(f.size)
            w.digest(f.digest)
            w.u32(UInt32(f.chunks.count))
            for i in f.chunks { w.u32(UInt32(i)) }
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
