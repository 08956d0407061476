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
        try load(path: path).root
    }

    /// Like ``read(path:)``, and says which kind of file it was: an Info.plist holds the app's
    /// other keys too, while a JSON configuration holds only Backlot's.
    public static func load(path: String) throws -> (root: PlistValue, isPropertyList: Bool) {
        let bytes = try FileDescriptor.readWholeFile(path, atMost: 16 << 20, what: "the configuration")
        let blank: Set<UInt8> = [0x20, 0x0a, 0x0d, 0x09, 0xef, 0xbb, 0xbf]  // white space and a UTF-8 byte-order mark
        if bytes.starts(with: Array("bplist".utf8)) || bytes.first(where: { !blank.contains($0) }) == UInt8(ascii: "<")
        {
            return (try PropertyListReader.read(bytes, source: path), true)
        }
        let root = try JSONReader(source: path).read(bytes).root
        guard root.objectMembers != nil else {
            throw BacklotError(
                .invalidInput, "the configuration must be a JSON object (or an Info.plist), not \(root.typeName)",
                context: path)
        }
        return (try plist(root, path: "", source: path), false)
    }

    static func plist(_ node: JSONNode, path: String, source: String) throws -> PlistValue {
        switch node.kind {
        case .null:
            throw BacklotError(
                .invalidInput, "the key \(path) is null; give it a value or leave it out",
                context: "\(source):\(node.position)")
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
                    throw BacklotError(
                        .invalidInput, "the key \(path.isEmpty ? m.key : path + "." + m.key) appears twice",
                        context: "\(source):\(m.keyPosition)")
                }
                out[m.key] = try plist(m.value, path: path.isEmpty ? m.key : path + "." + m.key, source: source)
            }
            return .dictionary(out)
        }
    }
}
