/// Writes small, uncompressed Apple Archives (`AA01` entries) by hand from the documented format,
/// for tests: each entry is `AA01`, a little-endian u16 header length, fields (3-letter key +
/// subtype + value), then the data blobs.
public enum AppleArchiveBuilder {
    /// An archive with a root directory entry and one regular file per (path, bytes), under `Contents/`.
    public static func archive(files: [(path: String, bytes: [UInt8])]) -> [UInt8] {
        var out = entry(type: "D", path: "", data: nil)
        out += entry(type: "D", path: "Contents", data: nil)
        for f in files { out += entry(type: "F", path: "Contents/" + f.path, data: f.bytes) }
        return out
    }

    static func entry(type: Character, path: String, data: [UInt8]?) -> [UInt8] {
        var fields: [UInt8] = Array("TYP1".utf8) + [UInt8(type.asciiValue!)]
        let p = Array(path.utf8)
        fields += Array("PATP".utf8) + le16(p.count) + p
        fields += Array("MOD2".utf8) + le16(type == "D" ? 0o755 : 0o644)
        if let data { fields += Array("DATB".utf8) + le32(data.count) }
        var header = Array("AA01".utf8) + le16(6 + fields.count) + fields
        if let data { header += data }
        return header
    }

    static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
    static func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(v >> (8 * $0) & 0xFF) } }
}
