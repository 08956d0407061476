import BacklotBasics
import BacklotCrypto
import BacklotJSON
import Foundation

/// The repository's signed list of trusted keys, one version per rotation (`docs/protocol.md` §5).
///
/// ```swift
/// // A client pinned to `pinned` follows rotations published as root-2.json, root-3.json, …
/// let trusted = try KeyList.follow(from: KeyList(version: 1, keys: [pinned])) { n in try fetch("v1/keys/root-\(n).json") }
/// ```
public struct KeyList: Sendable, Hashable {
    /// The envelope payload type of key lists.
    public static let payloadType = "application/vnd.backlot.root+json"

    public let version: Int
    public let keys: [Ed25519.PublicKey]

    public init(version: Int, keys: [Ed25519.PublicKey]) {
        self.version = version
        self.keys = keys
    }

    /// The payload bytes (keys in UTF-8 order).
    public var payload: [UInt8] {
        Array(
            JSONNode.object([
                "keys": .array(
                    keys.map {
                        .object([
                            "keyid": .string($0.keyID),
                            "publicKey": .string(Data($0.rawRepresentation).base64EncodedString()),
                        ])
                    }),
                "specVersion": .number(1),
                "type": .string("backlot.root"),
                "version": .number(version),
            ]).serialized().utf8)
    }

    /// Parses verified payload bytes.
    public static func decode(_ payload: [UInt8], source: String) throws -> KeyList {
        let root = try JSONReader(source: source, allowsComments: false, allowsTrailingCommas: false, maximumDepth: 8)
            .read(payload).root
        let f = Fields(node: root, path: "root", source: source)
        guard try f.string("type") == "backlot.root" else { throw f.bad("type", "is not backlot.root") }
        let keys = try f.array("keys").enumerated().map { i, node -> Ed25519.PublicKey in
            let k = Fields(node: node, path: "root.keys[\(i)]", source: source)
            guard let raw = Data(base64Encoded: try k.string("publicKey")) else {
                throw k.bad("publicKey", "is not base64")
            }
            let key = try Ed25519.PublicKey(rawRepresentation: Array(raw))
            guard key.keyID == (try k.string("keyid")) else { throw k.bad("keyid", "does not match the key") }
            return key
        }
        guard !keys.isEmpty else { throw f.bad("keys", "is empty") }
        return KeyList(version: try f.integer("version", in: 1...maximumVersion), keys: keys)
    }

    /// Accepts the next key list if it is signed by a key of `self` and by every key it lists,
    /// and its version is exactly one more.
    /// - Throws: ``BacklotError/Code/untrusted`` otherwise.
    public func accept(next bytes: [UInt8], source: String) throws -> KeyList {
        let payload = try SignedEnvelope.open(bytes, expecting: Self.payloadType, trusting: keys, source: source)
        let next = try Self.decode(payload, source: source)
        guard next.version == version + 1 else {
            throw BacklotError(
                .untrusted, "key list version \(next.version) does not follow version \(version)", context: source)
        }
        _ = try SignedEnvelope.open(
            bytes, expecting: Self.payloadType, trusting: next.keys, requireAll: true, source: source)
        return next
    }

    /// The highest key-list version a reader accepts (a bound on every walk along the chain).
    public static let maximumVersion = 100_000

    /// Follows rotations from `start` until `fetch` returns nil (no newer version).
    public static func follow(from start: KeyList, fetch: (Int) throws -> [UInt8]?) throws -> KeyList {
        var current = start
        while current.version < maximumVersion, let bytes = try fetch(current.version + 1) {
            current = try current.accept(next: bytes, source: "root-\(current.version + 1).json")
        }
        return current
    }

    /// Finds where a pinned key enters the chain: the first key list (from version 1 on, until
    /// `fetch` returns nil) that lists one of `pinned` and carries a valid signature by that key.
    ///
    /// An app pins whatever `root.pub` is current when it is built, which may be the key of a
    /// later rotation (version N): the chain is trusted from the list the pinned key signed about
    /// itself, and followed from there (``follow(from:fetch:)``). A list that does not list a
    /// pinned key, or that the pinned key did not sign, is passed over, never trusted.
    ///
    /// The current list (`root.json`, from `current`) is tried first, which finds a key pinned
    /// since the last rotation in one request; otherwise versions 1, 2, … are read, at most
    /// `limit` of them and for at most `budget` (measured on a monotonic clock), so a hostile
    /// mirror that serves endless unsigned lists costs a bounded number of requests.
    /// - Returns: the list, or nil when no list read names a pinned key.
    public static func anchor(
        pinned: [Ed25519.PublicKey], current: () throws -> [UInt8]? = { nil }, fetch: (Int) throws -> [UInt8]?,
        limit: Int = 1000, budget: Duration = .seconds(120)
    ) throws -> KeyList? {
        if let bytes = try current(), let list = selfSigned(bytes, pinned: pinned, version: nil) { return list }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: budget)
        var version = 1
        while version <= min(limit, maximumVersion), clock.now < deadline, let bytes = try fetch(version) {
            if let list = selfSigned(bytes, pinned: pinned, version: version) { return list }
            version += 1
        }
        return nil
    }

    /// The list in `bytes` when it names one of `pinned` and carries a valid signature by that key
    /// (and has the `version` expected, when one is).
    static func selfSigned(_ bytes: [UInt8], pinned: [Ed25519.PublicKey], version: Int?) -> KeyList? {
        let source = version.map { "root-\($0).json" } ?? "root.json"
        let pinnedIDs = Set(pinned.map(\.keyID))
        guard let payload = try? SignedEnvelope.open(bytes, expecting: payloadType, trusting: pinned, source: source),
            let list = try? decode(payload, source: source), version == nil || list.version == version
        else { return nil }
        let listed = list.keys.filter { pinnedIDs.contains($0.keyID) }
        guard !listed.isEmpty,
            (try? SignedEnvelope.open(bytes, expecting: payloadType, trusting: listed, source: source)) != nil
        else { return nil }
        return list
    }
}
