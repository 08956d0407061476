import BacklotBasics
import BacklotCrypto
import BacklotJSON

extension Catalog {
    /// A delta file that takes a client from an older version of a pack (`base`) to a release
    /// (docs/protocol.md §3, docs/format.md §14). The signature covers its size and SHA-256.
    public struct Delta: Sendable, Hashable {
        /// The pack digest (`index.sha256`) of the version the client must hold.
        public var base: SHA256Digest
        /// The delta file's URL relative to the catalog (`../../../deltas/SHA256.delta`).
        public var url: String
        /// The whole file's size and SHA-256.
        public var size: UInt64
        public var sha256: SHA256Digest
        /// Header + index delta + table: what a client reads with its first Range request.
        public var prefixLength: UInt64

        public init(base: SHA256Digest, url: String, size: UInt64, sha256: SHA256Digest, prefixLength: UInt64) {
            self.base = base
            self.url = url
            self.size = size
            self.sha256 = sha256
            self.prefixLength = prefixLength
        }

        /// The delta as the catalog lists it.
        public var json: JSONNode {
            .object([
                "base": .string(base.hex), "prefixLength": .number(prefixLength), "sha256": .string(sha256.hex),
                "size": .number(size), "url": .string(url),
            ])
        }

        static func decode(_ f: Fields) throws -> Delta {
            let size = try f.integer("size", in: UInt64(96)...maximumSize)
            let prefix = try f.integer("prefixLength", in: UInt64(96)...size)
            return Delta(
                base: try f.digest("base"), url: try f.string("url"), size: size, sha256: try f.digest("sha256"),
                prefixLength: prefix)
        }
    }

    /// A list of deltas as JSON (`{"deltas":[…]}`, what the repository keeps beside the delta files).
    public static func encodeDeltaList(_ deltas: [Delta]) -> [UInt8] {
        Array(
            JSONNode.object(["deltas": .array(deltas.sorted { $0.base.hex < $1.base.hex }.map(\.json))]).serialized()
                .utf8)
    }

    /// Reads what ``encodeDeltaList(_:)`` wrote.
    /// - Throws: ``BacklotError/Code/untrusted`` naming the field that is wrong.
    public static func decodeDeltaList(_ bytes: [UInt8], source: String) throws -> [Delta] {
        let root = try JSONReader(source: source, allowsComments: false, allowsTrailingCommas: false, maximumDepth: 8)
            .read(bytes).root
        return try decodeDeltas(Fields(node: root, path: "list", source: source))
    }

    /// A release's `deltas` member: absent (older catalogs, no delta) is an empty list; bases are unique.
    static func decodeDeltas(_ f: Fields) throws -> [Delta] {
        guard f.node["deltas"] != nil else { return [] }
        var deltas: [Delta] = []
        for (i, node) in try f.array("deltas").enumerated() {
            deltas.append(try Delta.decode(Fields(node: node, path: f.path + ".deltas[\(i)]", source: f.source)))
        }
        guard Set(deltas.map(\.base)).count == deltas.count else { throw f.bad("deltas", "lists a base twice") }
        return deltas
    }
}
