/// The names of the values in `state.sqlite`'s `meta` table, each named here once.
///
/// ```swift
/// let version = try store.read { try $0.value(forKey: .catalogVersion) }
/// ```
public struct StateKey: Sendable, Hashable {
    /// The name stored.
    public let name: String

    init(_ name: String) { self.name = name }

    /// The device's identifier, made once per container (staged rollouts hash it).
    public static let deviceID = StateKey("deviceID")
    /// The last verified catalog: its version (never accepted lower), its signed envelope, the
    /// app and channel it is for, and the keys that verified it.
    public static let catalogVersion = StateKey("catalogVersion")
    public static let catalogEnvelope = StateKey("catalogEnvelope")
    public static let catalogFor = StateKey("catalogFor")
    public static let catalogKeys = StateKey("catalogKeys")
    /// The newest key list the container trusts.
    public static let keyList = StateKey("keyList")
    /// The container is an App Clip's.
    public static let isAppClip = StateKey("isAppClip")
    /// The process answering a content request (scheduling from others is refused meanwhile).
    public static let contentRequest = StateKey("contentRequest")
    /// The app was launched (from releases before the launch record; kept for them).
    public static let launched = StateKey("launched")
    /// Bytes counted against the allowance before the first launch (all, essential).
    public static let used = StateKey("used")
    public static let usedEssential = StateKey("usedEssential")
    /// Bytes of finished URL downloads, against the install-size caps (all, essential).
    public static let installedBytes = StateKey("installed")
    public static let installedEssentialBytes = StateKey("installedEssential")

    /// The packs deleted to free space that the app has not been told of yet (a JSON array of IDs).
    public static let evictedPacks = StateKey("evictedPacks")

    /// The language the app chose for its localized packs (AssetPackManager's `resolvedLanguage`), BCP-47.
    public static let resolvedLanguage = StateKey("resolvedLanguage")
    /// The localized packs AssetPackManager's `reconcilePreferredLanguages()` downloaded (a JSON array of IDs): the
    /// ones it may remove again; packs the app downloaded itself are never in it.
    public static let languagePacks = StateKey("languagePacks")

    /// The device's reports (docs/privacy.md): the UTC day (`YYYY-MM-DD`) of the last one and the
    /// releases it said the device held (a JSON array), and the install outcomes not reported yet
    /// (a JSON array of counts per release).
    public static let reportDay = StateKey("reportDay")
    public static let reportedHeld = StateKey("reportedHeld")
    public static let unreportedInstalls = StateKey("unreportedInstalls")

    /// What the last install of pack `id` took from a delta file.
    public static func lastDeltaUse(ofPack id: String) -> StateKey { StateKey("delta." + id) }
}
