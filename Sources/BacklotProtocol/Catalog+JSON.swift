import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotJSON
import Foundation

extension Catalog {
    /// The payload bytes: compact JSON, keys in UTF-8 order (userInfo as written).
    public var payload: [UInt8] {
        Array(json.serialized().utf8)
    }

    public var json: JSONNode {
        JSONNode.object([
            "app": .string(app),
            "channel": .string(channel.rawValue),
            "expires": .string(RFC3339.string(expires)),
            "issued": .string(RFC3339.string(issued)),
            "packs": .array(
                packs.map { entry in
                    var members = Catalog.releaseMembers(entry.release)
                    if let candidate = entry.candidate {
                        var c = Catalog.releaseMembers(candidate)
                        c.append(JSONMember(key: "rolloutBasisPoints", value: .number(entry.rolloutBasisPoints)))
                        members.append(JSONMember(key: "candidate", value: JSONNode(.object(Catalog.sorted(c)))))
                    }
                    members.append(JSONMember(key: "id", value: .string(entry.id.rawValue)))
                    return JSONNode(.object(Catalog.sorted(members)))
                }),
            "specVersion": .number(1),
            "type": .string("backlot.catalog"),
            "version": .number(version),
        ])
    }

    static func sorted(_ members: [JSONMember]) -> [JSONMember] {
        members.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
    }

    static func releaseMembers(_ r: Release) -> [JSONMember] {
        var m: [JSONMember] = [
            JSONMember(
                key: "archive",
                value: .object([
                    "sha256": .string(r.archiveSHA256.hex), "size": .number(r.archiveSize),
                    "url": .string(r.archiveURL),
                ])),
            JSONMember(key: "downloadPolicy", value: r.downloadPolicy.json),
            JSONMember(
                key: "index",
                value: .object([
                    "length": .number(r.indexLength), "offset": .number(r.indexOffset),
                    "sha256": .string(r.indexSHA256.hex),
                ])),
            JSONMember(key: "installSize", value: .number(r.installSize)),
            JSONMember(key: "platforms", value: .array(r.platforms.map { .string($0.rawValue) })),
            JSONMember(key: "version", value: .number(r.version)),
        ]
        if !r.deltas.isEmpty {
            m.append(
                JSONMember(key: "deltas", value: .array(r.deltas.sorted { $0.base.hex < $1.base.hex }.map(\.json))))
        }
        if let language = r.language { m.append(JSONMember(key: "language", value: .string(language))) }
        if let userInfo = r.userInfo { m.append(JSONMember(key: "userInfo", value: userInfo)) }
        if let variants = r.variants { m.append(JSONMember(key: "variants", value: variants.json)) }
        return m
    }

    /// Parses verified payload bytes. Unknown keys are ignored (for newer servers); missing or
    /// mistyped ones are refused.
    public static func decode(_ payload: [UInt8], source: String) throws -> Catalog {
        let root = try JSONReader(source: source, allowsComments: false, allowsTrailingCommas: false, maximumDepth: 64)
            .read(payload).root
        let r = Fields(node: root, path: "catalog", source: source)
        guard try r.string("type") == "backlot.catalog" else { throw r.bad("type", "is not backlot.catalog") }
        guard try r.integer("specVersion", as: UInt64.self) == 1 else {
            throw r.bad("specVersion", "is not 1 (a newer Backlot published it: upgrade)")
        }
        let app = try r.string("app")
        guard let channel = Channel(rawValue: try r.string("channel")) else {
            throw r.bad("channel", "is not internal, external or production")
        }
        guard let issued = RFC3339.date(try r.string("issued")) else {
            throw r.bad("issued", "is not an RFC 3339 time")
        }
        guard let expires = RFC3339.date(try r.string("expires")) else {
            throw r.bad("expires", "is not an RFC 3339 time")
        }
        let version = try r.integer("version", as: UInt64.self)
        var packs: [Entry] = []
        for (i, node) in try r.array("packs").enumerated() {
            let p = Fields(node: node, path: "catalog.packs[\(i)]", source: source)
            guard let id = try? PackID(try p.string("id")) else { throw p.bad("id", "is not a valid pack ID") }
            let release = try decodeRelease(p)
            var candidate: Release? = nil
            var basisPoints = 0
            if let c = node["candidate"] {
                let cf = Fields(node: c, path: "catalog.packs[\(i)].candidate", source: source)
                candidate = try decodeRelease(cf)
                basisPoints = try cf.integer("rolloutBasisPoints", in: 0...10_000)
            }
            packs.append(Entry(id: id, release: release, candidate: candidate, rolloutBasisPoints: basisPoints))
        }
        guard Set(packs.map(\.id)).count == packs.count else { throw r.bad("packs", "lists a pack ID twice") }
        return Catalog(app: app, channel: channel, version: version, issued: issued, expires: expires, packs: packs)
    }

    static func decodeRelease(_ f: Fields) throws -> Release {
        guard let policyNode = f.node["downloadPolicy"], let policy = DownloadPolicy(json: policyNode) else {
            throw f.bad("downloadPolicy", "is missing or invalid")
        }
        guard let platformsNode = f.node["platforms"], let platforms = Platform.list(json: platformsNode) else {
            throw f.bad("platforms", "is missing or invalid")
        }
        let archive = Fields(node: try f.object("archive"), path: f.path + ".archive", source: f.source)
        let index = Fields(node: try f.object("index"), path: f.path + ".index", source: f.source)
        var release = Release(
            version: try f.integer("version", in: 1...Int(Int32.max)), downloadPolicy: policy, platforms: platforms,
            userInfo: f.node["userInfo"], language: f.node["language"]?.stringValue,
            installSize: try f.integer("installSize", in: 0...maximumSize),
            archiveURL: try archive.string("url"),
            archiveSize: try archive.integer("size", in: UInt64(PackHeader.size)...maximumSize),
            archiveSHA256: try archive.digest("sha256"),
            indexOffset: try index.integer("offset", in: UInt64(PackHeader.size)...maximumSize),
            indexLength: try index.integer("length", in: 1...PackHeader.maximumIndexLength),
            indexSHA256: try index.digest("sha256"))
        release.deltas = try decodeDeltas(f)
        if let node = f.node["variants"] {
            do {
                release.variants = try PackVariants(json: node, source: f.source)
            } catch let e as BacklotError {
                throw f.bad("variants", e.message)
            }
        }
        return release
    }

    /// The largest size or offset a catalog may state (2^62 bytes): every size a client later
    /// converts or adds is far from overflowing.
    static let maximumSize: UInt64 = 1 << 62
}

/// Typed access to an object's members with errors that name the JSON path.
struct Fields {
    let node: JSONNode
    let path: String
    let source: String

    func bad(_ key: String, _ message: String) -> BacklotError {
        BacklotError(.untrusted, "\(path).\(key) \(message)", context: source)
    }

    func value(_ key: String) throws -> JSONNode {
        guard let v = node[key] else { throw bad(key, "is missing") }
        return v
    }

    func string(_ key: String) throws -> String {
        guard let s = try value(key).stringValue else { throw bad(key, "is not a string") }
        return s
    }

    /// A whole number that fits `T` (and `range`), through the one checked rule (``CheckedInteger``):
    /// a value out of range is an error naming the field, never a trap.
    func integer<T: FixedWidthInteger>(
        _ key: String, as type: T.Type = T.self, in range: ClosedRange<T>? = nil
    ) throws -> T {
        let node = try value(key)
        guard case .number(let text) = node.kind else { throw bad(key, "is not a whole number") }
        let bounds = range ?? (T.isSigned ? 0...T.max : T.min...T.max)
        guard let n: T = node.integer(as: T.self), bounds.contains(n) else {
            throw bad(key, "is \(text.prefix(40)), not a whole number in \(bounds.lowerBound)…\(bounds.upperBound)")
        }
        return n
    }

    func array(_ key: String) throws -> [JSONNode] {
        guard let a = try value(key).arrayElements else { throw bad(key, "is not an array") }
        return a
    }

    func object(_ key: String) throws -> JSONNode {
        let v = try value(key)
        guard v.objectMembers != nil else { throw bad(key, "is not an object") }
        return v
    }

    func digest(_ key: String) throws -> SHA256Digest {
        guard let d = SHA256Digest(hex: try string(key)) else { throw bad(key, "is not 64 hex digits") }
        return d
    }
}
