import BacklotBasics
import BacklotJSON

/// Reads a configuration that is either an app's Info.plist (XML or binary) or Backlot's JSON
/// (comments allowed), into one ``PlistValue`` so that both are read by the same key rules.
///
/// ```swift
/// let settings = try ConfigurationFile.read(path: "Info.plist").dictionary ?? [:]
/// let manifestURL = settings["BAManifestURL"]?.string
/// ```
public enum ConfigurationFile {
    /// - Throws: ``BacklotError/Code/invalidInput`` or ``BacklotError/Code/invalidJSON`` naming the
    ///   place; ``BacklotError/Code/io`` when the file cannot be read.
    public static func read(path: String) throws -> PlistValue {
        let fd = try FileDescriptor.openForReading(path)
        defer { fd.close() }
        let size = try fd.size()
        guard size <= 16 << 20 else {
            throw BacklotError(.invalidInput, "the configuration is \(size) bytes; at most 16 MiB are read", context: path)
        }
        let bytes = try fd.read(count: Int(size), at: 0)
        let start = bytes.drop { $0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09 || $0 == 0xef || $0 == 0xbb || $0 == 0xbf }
        if bytes.starts(with: Array("bplist".utf8)) || start.first == UInt8(ascii: "<") {
            return try PropertyListReader.read(bytes, source: path)
        }
        let root = try JSONReader(source: path).read(bytes).root
        guard root.objectMembers != nil else {
            throw BacklotError(.invalidInput, "the configuration must be a JSON object (or an Info.plist), not \(root.typeName)", context: path)
        }
        return try plist(root, path: "", source: path)
    }

    static func plist(_ node: JSONNode, path: String, source: String) throws -> PlistValue {
        switch node.kind {
        case .null:
            throw BacklotError(.invalidInput, "the key \(path) is null; give it a value or leave it out", context: "\(source):\(node.position)")
        case .bool(let b): return .bool(b)
        case .number(let text):
            if let i = Int64(text) { return .integer(i) }
            if let u = UInt64(text) { return .unsignedInteger(u) }
            return .real(Double(text) ?? 0)
        case .string(let s): return .string(s)
        case .array(let items):
            return .array(try items.enumerated().map { try plist($1, path: "\(path)[\($0)]", source: source) })
        case .object(let members):
            var out: [String: PlistValue] = [:]
            for m in members {
                if out[m.key] != nil {
                    throw BacklotError(.invalidInput, "the key \(path.isEmpty ? m.key : path + "." + m.key) appears twice", context: "\(source):\(m.keyPosition)")
                }
                out[m.key] = try plist(m.value, path: path.isEmpty ? m.key : path + "." + m.key, source: source)
            }
            return .dictionary(out)
        }
    }
}
