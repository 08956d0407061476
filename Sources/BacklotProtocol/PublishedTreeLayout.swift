import BacklotBasics
import BacklotFormat

/// One file of the published tree (docs/protocol.md §1), the one place that spells the tree's paths.
///
/// The server builds the paths it writes from it, its download counters and cache headers parse
/// the paths they see with it, and the client resolves what a catalog names with it: no other
/// module writes `v1/…` out by hand.
///
/// Paths are relative to the tree's root and never start with `/`. Parsing is exact: a path parses
/// only when ``path`` would give it back byte for byte (an upper-case digest, an empty component,
/// `.` or `..`, an unknown channel or platform, or any extra component gives nil).
///
/// ```swift
/// let catalog = PublishedTreeLayout.catalog(app: "com.example.game", channel: .production)
/// catalog.path                                   // "v1/apps/com.example.game/production/catalog.json"
/// PublishedTreeLayout(path: catalog.path)        // catalog
/// PublishedTreeLayout.archiveReference(sha256: digest)   // "../../../packs/DIGEST.pack", as a catalog names it
/// ```
public enum PublishedTreeLayout: Hashable, Sendable {
    /// `v1/apps/APP/CHANNEL/catalog.json`: the signed catalog of one app and channel.
    case catalog(app: String, channel: Channel)
    /// `v1/packs/SHA256.pack`: an archive, named by the SHA-256 of its bytes (64 lower-case hex digits).
    case pack(sha256: String)
    /// `v1/deltas/SHA256.delta`: a delta between two archives, named by the SHA-256 of its bytes.
    case delta(sha256: String)
    /// `v1/deltas/DIGEST.json`: the deltas made into the version whose pack digest is DIGEST (what
    /// publishing copies into the catalog).
    case deltaList(packDigest: String)
    /// `v1/keys/root.json`: the current key list.
    case currentKeyList
    /// `v1/keys/root-N.json`: key list number N (N ≥ 1), kept for ever so a client can follow the chain.
    case keyList(version: Int)
    /// `v1/apple/APP/CHANNEL/PLATFORM/manifest.json`: Apple's download manifest for one platform.
    case appleManifest(app: String, channel: Channel, platform: Platform)
    /// `v1/apple/APP/CHANNEL/PLATFORM/packs/ID`: an Apple archive (`.aar`) under its pack's ID.
    case applePack(app: String, channel: Channel, platform: Platform, pack: String)

    /// The first component of every path: the layout's version.
    public static let root = "v1"
    /// The folder of archives, `v1/packs`.
    public static let packsFolder = root + "/packs"
    /// The folder of deltas, `v1/deltas`.
    public static let deltasFolder = root + "/deltas"
    /// The folder of catalogs, `v1/apps`.
    public static let appsFolder = root + "/apps"
    /// The folder of key lists, `v1/keys`.
    public static let keysFolder = root + "/keys"

    /// The request header a client names its app with when it downloads from the tree
    /// (`Backlot-App: com.example.game`), so that an archive two apps share is counted for the
    /// app whose device downloaded it. A server or a cache that ignores it serves the same bytes.
    public static let appHeader = "Backlot-App"

    /// The response header that tells a device when to check its catalog next
    /// (`Backlot-Check-After: SECONDS`, docs/protocol.md §4.1): a hint, not signed, that a device
    /// honours up to ``longestCheckAfter`` and only to check later, never sooner. `backlot serve`
    /// sends it with catalogs when configured, and raises it while it sheds load; an edge may add it.
    public static let checkAfterHeader = "Backlot-Check-After"
    /// The longest wait a ``checkAfterHeader`` can impose on a device: a day.
    public static let longestCheckAfter = 86_400

    /// How people are told where a catalog is, in help texts and errors.
    public static let catalogTemplate = "\(appsFolder)/APP/CHANNEL/catalog.json"

    /// The folder of one app and channel's catalog, `v1/apps/APP/CHANNEL`.
    public static func catalogFolder(app: String, channel: Channel) -> String {
        "\(appsFolder)/\(app)/\(channel.rawValue)"
    }

    /// The folder of one app and channel's Apple manifests, `v1/apple/APP/CHANNEL`.
    public static func appleFolder(app: String, channel: Channel) -> String {
        "\(root)/apple/\(app)/\(channel.rawValue)"
    }

    /// The folder of one platform's Apple manifest, `v1/apple/APP/CHANNEL/PLATFORM`.
    public static func appleFolder(app: String, channel: Channel, platform: Platform) -> String {
        appleFolder(app: app, channel: channel) + "/" + platform.rawValue.lowercased()
    }

    /// The folder of one platform's Apple archives, `v1/apple/APP/CHANNEL/PLATFORM/packs`: the
    /// manifest's base URL, to which Apple's framework appends `/ID`.
    public static func applePacksFolder(app: String, channel: Channel, platform: Platform) -> String {
        appleFolder(app: app, channel: channel, platform: platform) + "/packs"
    }

    /// The file's path relative to the tree's root.
    public var path: String {
        switch self {
        case .catalog(let app, let channel): Self.catalogFolder(app: app, channel: channel) + "/catalog.json"
        case .pack(let sha): "\(Self.packsFolder)/\(sha).pack"
        case .delta(let sha): "\(Self.deltasFolder)/\(sha).delta"
        case .deltaList(let digest): "\(Self.deltasFolder)/\(digest).json"
        case .currentKeyList: Self.keysFolder + "/root.json"
        case .keyList(let version): "\(Self.keysFolder)/root-\(version).json"
        case .appleManifest(let app, let channel, let platform):
            Self.appleFolder(app: app, channel: channel, platform: platform) + "/manifest.json"
        case .applePack(let app, let channel, let platform, let pack):
            Self.applePacksFolder(app: app, channel: channel, platform: platform) + "/" + pack
        }
    }

    /// What a path relative to the tree's root names, or nil for any path the tree does not hold
    /// in this form. A leading `/` (a request's path) is accepted; any other deviation is not.
    /// Components are compared as bytes: a path parses only if ``path`` gives it back byte for byte
    /// (Swift's `==` would take the Kelvin sign for a `K`).
    ///
    /// The server parses every request's path with it, several times, so it reads the path's UTF-8
    /// bytes in place and makes a `String` only for what the result holds; every comparison is of
    /// bytes, so the result gives the path back byte for byte by construction (a key list's number
    /// is checked by writing it again: `root-01.json` is not `root-1.json`).
    public init?(path: some StringProtocol) {
        let inPlace = path.utf8.withContiguousStorageIfAvailable { Self.parse($0[...]) }
        let file: PublishedTreeLayout?
        if let inPlace {
            file = inPlace
        } else {
            var copy = String(path)
            file = copy.withUTF8 { Self.parse($0[...]) }
        }
        guard let file else { return nil }
        self = file
    }

    private typealias Bytes = Slice<UnsafeBufferPointer<UInt8>>

    /// The most components a file's path has (`v1/apple/APP/CHANNEL/PLATFORM/packs/ID`).
    private static let deepest = 7

    /// The components of `bytes` between `/`, or nil when there are more than the deepest file
    /// has, or one is empty, `.` or `..`.
    private static func components(_ bytes: Bytes) -> [Bytes]? {
        var parts: [Bytes] = []
        parts.reserveCapacity(deepest)
        var start = bytes.startIndex
        while true {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "/")) ?? bytes.endIndex
            let part = bytes[start..<end]
            guard parts.count < deepest, !part.isEmpty, !part.elementsEqual(".".utf8), !part.elementsEqual("..".utf8)
            else { return nil }
            parts.append(part)
            guard end < bytes.endIndex else { return parts }
            start = end + 1
        }
    }

    /// The file that the path `bytes` names (a leading `/` dropped).
    private static func parse(_ bytes: Bytes) -> PublishedTreeLayout? {
        guard let parts = components(bytes.first == UInt8(ascii: "/") ? bytes.dropFirst() : bytes),
            parts.count >= 3, parts[0].elementsEqual(root.utf8)
        else { return nil }
        let folder = parts[1]
        func text(_ part: Bytes) -> String { String(decoding: part, as: UTF8.self) }
        switch parts.count {
        case 5 where folder.elementsEqual("apps".utf8):
            guard let channel = channel(parts[3]), parts[4].elementsEqual("catalog.json".utf8) else { return nil }
            return .catalog(app: text(parts[2]), channel: channel)
        case 3 where folder.elementsEqual("packs".utf8):
            return digest(parts[2], suffix: ".pack").map { .pack(sha256: $0) }
        case 3 where folder.elementsEqual("deltas".utf8):
            if let digest = digest(parts[2], suffix: ".json") { return .deltaList(packDigest: digest) }
            return digest(parts[2], suffix: ".delta").map { .delta(sha256: $0) }
        case 3 where folder.elementsEqual("keys".utf8):
            let name = parts[2]
            if name.elementsEqual("root.json".utf8) { return .currentKeyList }
            guard name.starts(with: "root-".utf8), name.suffix(5).elementsEqual(".json".utf8) else { return nil }
            let digits = name.dropFirst(5).dropLast(5)
            guard let version = CheckedInteger.parse(text(digits), as: Int.self), version >= 1,
                String(version).utf8.elementsEqual(digits)
            else { return nil }
            return .keyList(version: version)
        case 6 where folder.elementsEqual("apple".utf8):
            guard let channel = channel(parts[3]), let platform = platform(parts[4]),
                parts[5].elementsEqual("manifest.json".utf8)
            else { return nil }
            return .appleManifest(app: text(parts[2]), channel: channel, platform: platform)
        case 7 where folder.elementsEqual("apple".utf8):
            guard let channel = channel(parts[3]), let platform = platform(parts[4]),
                parts[5].elementsEqual("packs".utf8)
            else { return nil }
            return .applePack(app: text(parts[2]), channel: channel, platform: platform, pack: text(parts[6]))
        default:
            return nil
        }
    }

    /// The channel whose folder is `name`.
    private static func channel(_ name: Bytes) -> Channel? {
        Channel.allCases.first { $0.rawValue.utf8.elementsEqual(name) }
    }

    /// The platforms with their folders' names (the platform's name in lower case).
    private static let platformFolders = Platform.allCases.map { ($0, $0.rawValue.lowercased()) }

    /// The platform whose folder is `name`.
    private static func platform(_ name: Bytes) -> Platform? {
        platformFolders.first { $0.1.utf8.elementsEqual(name) }?.0
    }

    /// The 64 lower-case hex digits of `name` before `suffix`, or nil.
    private static func digest(_ name: Bytes, suffix: String) -> String? {
        guard name.count == 64 + suffix.utf8.count, name.suffix(suffix.utf8.count).elementsEqual(suffix.utf8) else {
            return nil
        }
        let sha = name.prefix(64)
        guard sha.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else { return nil }
        return String(decoding: sha, as: UTF8.self)
    }

    /// The SHA-256 (hex) that names a pack's or a delta's bytes, nil for any other file.
    public var contentAddress: String? {
        switch self {
        case .pack(let sha), .delta(let sha): sha
        default: nil
        }
    }
}
