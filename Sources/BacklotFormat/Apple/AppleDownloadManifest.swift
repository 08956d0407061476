import BacklotBasics
import BacklotJSON

/// Apple's self-hosted download manifest, the file an app's `BAManifestURL` names:
/// `{"assetPacks":[{"id","url","version","downloadSize","downloadPolicy","host":{"thirdParty":{}}}]}`
/// as `ba-package download-manifest create` writes it. Strict JSON.
///
/// ```swift
/// var m = AppleDownloadManifest()
/// m.set(AppleDownloadManifest.Entry(id: "Tutorial", baseURL: "https://cdn.example.com/packs", version: 0,
///                                   downloadSize: 596, downloadPolicy: .onDemand, userInfo: nil))
/// let json = m.encoded
/// ```
public struct AppleDownloadManifest: Sendable, Hashable {
    /// One pack.
    public struct Entry: Sendable, Hashable {
        public var id: String
        public var url: String
        public var version: Int
        public var downloadSize: UInt64
        public var downloadPolicy: DownloadPolicy
        /// Copied from the pack's manifest, as ba-package does.
        public var userInfo: JSONNode?

        /// An entry whose URL is `baseURL` + "/" + ID (one slash, whatever the base ends with).
        public init(
            id: String, baseURL: String, version: Int, downloadSize: UInt64, downloadPolicy: DownloadPolicy,
            userInfo: JSONNode?
        ) {
            self.init(
                id: id, url: AppleDownloadManifest.packURL(base: baseURL, id: id), version: version,
                downloadSize: downloadSize,
                downloadPolicy: downloadPolicy, userInfo: userInfo)
        }

        public init(
            id: String, url: String, version: Int, downloadSize: UInt64, downloadPolicy: DownloadPolicy,
            userInfo: JSONNode?
        ) {
            self.id = id
            self.url = url
            self.version = version
            self.downloadSize = downloadSize
            self.downloadPolicy = downloadPolicy
            self.userInfo = userInfo
        }
    }

    /// The packs, in the order written.
    public var assetPacks: [Entry]

    public init(assetPacks: [Entry] = []) { self.assetPacks = assetPacks }

    /// `base` + "/" + `id`, with exactly one slash.
    public static func packURL(base: String, id: String) -> String {
        (base.hasSuffix("/") ? base : base + "/") + id
    }

    /// Adds an entry, or replaces the one with the same ID.
    public mutating func set(_ entry: Entry) {
        if let i = assetPacks.firstIndex(where: { $0.id == entry.id }) {
            assetPacks[i] = entry
        } else {
            assetPacks.append(entry)
        }
    }

    /// The JSON text (pretty-printed, strict).
    public var encoded: String {
        JSONNode.object([
            "assetPacks": .array(
                assetPacks.map { e in
                    var members: [JSONMember] = [
                        JSONMember(key: "id", value: .string(e.id)),
                        JSONMember(key: "url", value: .string(e.url)),
                        JSONMember(key: "version", value: .number(e.version)),
                        JSONMember(key: "downloadSize", value: .number(e.downloadSize)),
                        JSONMember(key: "downloadPolicy", value: e.downloadPolicy.json),
                        JSONMember(key: "host", value: .object(["thirdParty": .object([:])])),
                    ]
                    if let u = e.userInfo { members.append(JSONMember(key: "userInfo", value: u)) }
                    return JSONNode(.object(members))
                })
        ]).prettyPrinted() + "\n"
    }

    /// Reads a download manifest (strict JSON).
    /// - Throws: ``BacklotError/Code/invalidInput`` naming the entry and field.
    public static func decode(_ bytes: [UInt8], source: String) throws -> AppleDownloadManifest {
        let root = try JSONReader(source: source, allowsComments: false, allowsTrailingCommas: false).read(bytes).root
        guard let list = root["assetPacks"]?.arrayElements else {
            throw BacklotError(.invalidInput, "a download manifest is {\"assetPacks\": [...]}", context: source)
        }
        return AppleDownloadManifest(
            assetPacks: try list.enumerated().map { i, e in
                func bad(_ field: String) -> BacklotError {
                    BacklotError(.invalidInput, "assetPacks[\(i)].\(field) is missing or invalid", context: source)
                }
                guard let id = e["id"]?.stringValue else { throw bad("id") }
                guard let url = e["url"]?.stringValue else { throw bad("url") }
                guard let version = e["version"]?.integer(as: Int.self), version >= 0 else { throw bad("version") }
                guard let size = e["downloadSize"]?.integer(as: UInt64.self) else { throw bad("downloadSize") }
                guard let policy = e["downloadPolicy"].flatMap(DownloadPolicy.init(json:)) else {
                    throw bad("downloadPolicy")
                }
                return Entry(
                    id: id, url: url, version: version, downloadSize: size, downloadPolicy: policy,
                    userInfo: e["userInfo"])
            })
    }
}
