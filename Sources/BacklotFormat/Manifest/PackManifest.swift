import BacklotBasics
import BacklotJSON

/// An asset pack's manifest: the same JSON as Apple's `ba-package` reads.
///
/// ```json
/// {
///   "assetPackID": "Tutorial",
///   "downloadPolicy": { "essential": { "installationEventTypes": ["firstInstallation"] } },
///   "fileSelectors": [ { "file": "Videos/Introduction.m4v" }, { "directory": "Textures" } ],
///   "platforms": ["iOS", "linux"]
/// }
/// ```
///
/// Read one with ``load(path:)`` or ``parse(_:source:)``; see `docs/format.md` for every rule.
public struct PackManifest: Sendable, Hashable {
    /// The pack's identifier.
    public var assetPackID: PackID
    /// When the pack is downloaded.
    public var downloadPolicy: DownloadPolicy
    /// What files the pack holds, in the order written.
    public var fileSelectors: [FileSelector]
    /// The platforms the pack is for, de-duplicated, in canonical order.
    public var platforms: [Platform]
    /// Free-form data for the app, kept exactly as written.
    public var userInfo: JSONNode?
    /// Where selector paths start, relative to the manifest's folder (`sourceRoot`).
    public var sourceRoot: String?
    /// A BCP-47 language tag for localized packs (`language`).
    public var language: String?
    /// Files selected for one texture format or device tier each (`variants`; `docs/format.md`
    /// §11), besides those of ``fileSelectors``, which every device gets.
    public var variants: [VariantSelectors] = []
    /// The texture format a device that reads none of the pack's gets (`variants.textureFormat.default`).
    public var defaultTextureFormat: String?

    public init(
        assetPackID: PackID, downloadPolicy: DownloadPolicy, fileSelectors: [FileSelector],
        platforms: [Platform], userInfo: JSONNode? = nil, sourceRoot: String? = nil, language: String? = nil
    ) {
        self.assetPackID = assetPackID
        self.downloadPolicy = downloadPolicy
        self.fileSelectors = fileSelectors
        self.platforms = Array(Set(platforms)).sorted()
        self.userInfo = userInfo
        self.sourceRoot = sourceRoot
        self.language = language
    }
}

extension PackManifest {
    /// The normalised manifest stored in a pack's index: ID, policy, platforms, userInfo, language.
    /// Selectors and the source root are packaging instructions, not part of the pack.
    public var normalizedJSON: JSONNode {
        // Keys in UTF-8 order, so that the text is canonical without re-sorting userInfo.
        var members: [JSONMember] = [
            JSONMember(key: "assetPackID", value: JSONNode(.string(assetPackID.rawValue))),
            JSONMember(key: "downloadPolicy", value: downloadPolicy.json),
        ]
        if let language { members.append(JSONMember(key: "language", value: JSONNode(.string(language)))) }
        members.append(
            JSONMember(key: "platforms", value: JSONNode(.array(platforms.map { JSONNode(.string($0.rawValue)) }))))
        if let userInfo { members.append(JSONMember(key: "userInfo", value: userInfo)) }
        return JSONNode(.object(members))
    }
}

extension DownloadPolicy {
    /// The policy as manifest JSON (`{"essential":{"installationEventTypes":[…]}}`).
    public var json: JSONNode {
        let body: JSONNode
        switch self {
        case .essential(let events), .prefetch(let events):
            let list = JSONNode(.array(events.sorted().map { JSONNode(.string($0.rawValue)) }))
            body = JSONNode(.object([JSONMember(key: "installationEventTypes", value: list)]))
        case .onDemand:
            body = JSONNode(.object([]))
        }
        return JSONNode(.object([JSONMember(key: name, value: body)]))
    }
}

/// The selectors of one variant in a manifest's `variants`: `"astc": [{"directory": "Textures/ASTC"}]`
/// under `textureFormat`. Their files get the variant's marker on their first component
/// (`Textures#tcf_astc/…`).
public struct VariantSelectors: Sendable, Hashable {
    public var dimension: VariantDimension
    /// A texture format, or a device tier as a digit.
    public var value: String
    public var fileSelectors: [FileSelector]

    public init(dimension: VariantDimension, value: String, fileSelectors: [FileSelector]) {
        self.dimension = dimension
        self.value = value
        self.fileSelectors = fileSelectors
    }

    /// The marker its files get: `#tcf_astc`, `#tier_2`.
    public var marker: String { dimension.suffix + value }
}

/// The former name of ``PackManifest``, kept for one release. `AssetPackManifest` is now Apple's
/// type in BacklotClient (the packs a catalog offers); a module that imports both spells this one
/// `PackManifest`.
@available(*, deprecated, renamed: "PackManifest")
public typealias AssetPackManifest = PackManifest
