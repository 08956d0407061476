import BacklotBasics
import BacklotClient
import BacklotContainer
import BacklotCrypto
import BacklotFormat
import BacklotInfoPlist
import BacklotPeerCache
import BacklotProtocol
import BacklotTaskScheduler
import Foundation

/// What the agent does for one container, read from Backlot's JSON configuration or from the
/// app's Info.plist (the same keys in both; paths are relative to the file).
///
/// Apple's keys: `BAManifestURL` (here: the signed catalog, `…/v1/apps/APP/CHANNEL/catalog.json`),
/// `BAInitialDownloadRestrictions`, `BAMaxInstallSize`, `BAEssentialMaxInstallSize`,
/// `BAAppGroupID`, `BGTaskSchedulerPermittedIdentifiers`. Backlot's keys:
///
/// | key | meaning | default |
/// |---|---|---|
/// | `BacklotCatalogURL` | the catalog, when `BAManifestURL` is not it | `BAManifestURL` |
/// | `BacklotTrustedKey` | the repository's public key file (`root.pub`) | required |
/// | `BacklotCAFile` | a CA certificate for a development server | system CAs |
/// | `BacklotPlatform` | the platform packs must be built for | `linux` |
/// | `BacklotExtensionPath` | the downloader extension executable | none |
/// | `BacklotExtensionTimeLimit` | seconds one extension call may run | 60 |
/// | `BacklotExtensionDailyBudget` | extension seconds per day (Apple: about 10 minutes) | 600 |
/// | `BacklotAppExecutable` | the app, launched in the background for due tasks | none |
/// | `BacklotAppArguments` | arguments before `--background-task ID` | none |
/// | `BacklotPrefetchRequiresUnmetered` | prefetch packs wait for an unmetered network | true |
/// | `BacklotNetworkMetered` | whether the network is metered when NetworkManager cannot say | false |
/// | `BacklotPeriodicCheckInterval` | seconds between catalog checks for an app used daily (at least 60) | 21600 |
/// | `BacklotPollInterval` | seconds between the agent's rounds (at least 0.05) | 5 |
/// | `BacklotBandwidthLimit` | bytes per second per connection for pack downloads (0: none) | 0 |
/// | `BacklotMaximumRangeBytes` | the largest Range request (progress is kept after each) | 2 MiB |
/// | `BacklotSendsReports` | report the releases held and installs' outcomes, in aggregate and without an identifier (docs/privacy.md) | true |
/// | `BacklotDeviceProfile` | what picks a pack's variant: `textureFormat=astc+etc2,deviceTier=high`; a key left out is detected (docs/variants.md) | detected |
/// | `BacklotPeers` | LAN peer caches asked for chunks before the origin, `http://HOST:PORT` each (docs/peer-cache.md) | none |
/// | `BacklotPeerDiscovery` | also ask the peer caches advertised on the local link (`_backlot._tcp`, Avahi) | false |
/// | `BacklotPeerCache` | serve this device's chunks to the local network (`backlot agent --peer-cache`) | false |
/// | `BacklotPeerCacheListen` | the addresses or interface names it listens on | the private addresses of the interfaces that are up |
/// | `BacklotPeerCachePort` | its port | 7301 |
/// | `BacklotPeerCacheRate` | bytes per second it sends at most, in all | 20 MiB |
/// | `BacklotPeerCacheConnections` | connections it holds at most | 32 |
/// | `BacklotMinimumFreeSpace` | bytes kept free on the container's file system: under it, finished files nobody claimed, then packs neither essential nor in use, are deleted, oldest first (0: never) | 128 MiB |
///
/// plus the task scheduler's keys (``TaskSchedulerConfiguration``). In JSON every key must be
/// known; in an Info.plist, unknown `BA…`, `BG…` and `Backlot…` keys are refused and others ignored.
public struct AgentConfiguration: Sendable {
    public var sourcePath: String
    public var catalogURL: URL
    public var app: String
    public var channel: Channel
    public var trustedKeys: [Ed25519.PublicKey]
    public var caFile: String?
    public var platform: Platform = .linux
    public var restrictions: DownloadRestrictions?
    public var appGroupID: String?
    public var extensionPath: String?
    public var extensionTimeLimit: TimeInterval = 60
    public var extensionDailyBudget: TimeInterval = 600
    public var appExecutable: String?
    public var appArguments: [String] = []
    public var prefetchRequiresUnmetered = true
    public var networkMetered = false
    public var periodicCheckInterval: TimeInterval = 21_600
    public var pollInterval: TimeInterval = 5
    public var bandwidthLimit: UInt64 = 0
    public var maximumRangeBytes: UInt64 = 2 << 20
    public var minimumFreeSpace: UInt64 = ClientContainer.defaultMinimumFreeSpace
    public var sendsReports = true
    /// `BacklotDeviceProfile`; nil: detected (``BacklotFormat/DeviceProfile/detected``).
    public var deviceProfile: DeviceProfile?
    public var scheduler: TaskSchedulerConfiguration
    /// The device's preferred languages, most preferred first (`BacklotPreferredLanguages`, BCP-47);
    /// nil: the environment's (``PreferredLanguages/current(environment:)``). The agent reads the
    /// key again each round: a change is a `languageChange` content request.
    public var preferredLanguages: [String]?
    /// The peer caches this device asks for chunks (`BacklotPeers`, `BacklotPeerDiscovery`).
    public var peers = PeerDirectory()
    /// Whether and how this device serves its chunks to the local network (`BacklotPeerCache…`);
    /// nil: it does not (``PeerCacheSettings``).
    public var peerCache: PeerCacheSettings?

    static let appleKeys = [
        "BAManifestURL", "BAInitialDownloadRestrictions", "BAMaxInstallSize", "BAEssentialMaxInstallSize",
        "BAAppGroupID",
        "BAHasManagedAssetPacks", "BAUsesAppleHosting",
    ]
    static let backlotKeys =
        [
            "BacklotCatalogURL", "BacklotTrustedKey", "BacklotCAFile", "BacklotPlatform", "BacklotExtensionPath",
            "BacklotExtensionTimeLimit", "BacklotExtensionDailyBudget", "BacklotAppExecutable", "BacklotAppArguments",
            "BacklotPrefetchRequiresUnmetered", "BacklotNetworkMetered", "BacklotPeriodicCheckInterval",
            "BacklotPollInterval", "BacklotBandwidthLimit", "BacklotMaximumRangeBytes", "BacklotMinimumFreeSpace",
            "BacklotPreferredLanguages", "BacklotSendsReports", "BacklotDeviceProfile",
        ] + PeerDirectory.configurationKeys + PeerCacheSettings.configurationKeys
    public static var keys: [String] { appleKeys + backlotKeys + TaskSchedulerConfiguration.keys }

    /// Reads a configuration file (JSON or an Info.plist).
    /// - Throws: ``BacklotError/Code/invalidInput`` naming the key that is wrong, missing or unknown.
    public init(path: String, containerPath: String) throws {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        let (root, isPlist) = try ConfigurationFile.load(path: absolute)
        guard let settings = root.dictionary else {
            throw BacklotError(.invalidInput, "the configuration must be a dictionary of keys", context: absolute)
        }
        try self.init(
            settings: settings, source: absolute, strictKeys: !isPlist,
            databasePath: ContainerLayout(root: containerPath).tasksDatabase)
    }

    public init(settings: [String: PlistValue], source: String, strictKeys: Bool, databasePath: String?) throws {
        let known = Set(Self.keys)
        for key in settings.keys.sorted() where !known.contains(key) {
            if strictKeys || key.hasPrefix("BA") || key.hasPrefix("BG") || key.hasPrefix("Backlot") {
                let guess = Suggestion.closest(to: key, in: Self.keys)
                throw BacklotError(
                    .invalidInput,
                    "the key \(key) is not a key Backlot knows\(guess.map { "; did you mean \($0)?" } ?? "")",
                    context: source,
                    hint: "the keys are listed in docs/agent.md")
            }
        }
        let base = URL(fileURLWithPath: source).deletingLastPathComponent().path
        func path(_ p: String) -> String { p.hasPrefix("/") ? p : base + "/" + p }
        sourcePath = source

        let catalogKey = settings["BacklotCatalogURL"] != nil ? "BacklotCatalogURL" : "BAManifestURL"
        guard let text = try ConfigurationKey.string(catalogKey, in: settings, source: source) else {
            throw ConfigurationKey.error(
                "BacklotCatalogURL", source: source,
                "is missing: give the catalog URL (…/\(PublishedTreeLayout.catalogTemplate)) here or as BAManifestURL")
        }
        guard let url = URL(string: text), let target = try? AssetPackManager.Configuration.target(ofCatalogURL: url)
        else {
            throw ConfigurationKey.error(
                catalogKey, source: source,
                "must be a Backlot catalog URL (http(s)://HOST/…/\(PublishedTreeLayout.catalogTemplate)), not \(text)")
        }
        // HTTPS, as the docs (and Apple, for BAManifestURL) require; plain HTTP only to this machine.
        if url.scheme?.lowercased() == "http", !Self.isLoopback(url.host ?? "") {
            throw ConfigurationKey.error(
                catalogKey, source: source,
                "is http:// to \(url.host ?? "a host") that is not this machine; catalogs are fetched over https:// (plain http only to 127.0.0.1, ::1 or localhost, for development)"
            )
        }
        catalogURL = url
        app = target.app
        channel = target.channel

        guard let keyFile = try ConfigurationKey.string("BacklotTrustedKey", in: settings, source: source) else {
            throw ConfigurationKey.error(
                "BacklotTrustedKey", source: source, "is missing: name the repository's public key file (its root.pub)")
        }
        do {
            trustedKeys = [try PublicKeyFile.read(path: path(keyFile))]
        } catch let e as BacklotError {
            throw ConfigurationKey.error(
                "BacklotTrustedKey", source: source,
                "names \(e.context ?? path(keyFile)), which \(e.message.hasPrefix("is ") || e.message.hasPrefix("holds ") ? e.message : "cannot be read: " + e.message)"
            )
        }
        caFile = try ConfigurationKey.string("BacklotCAFile", in: settings, source: source).map(path)
        if let p = try ConfigurationKey.string("BacklotPlatform", in: settings, source: source) {
            guard let platform = Platform(rawValue: p) else {
                throw ConfigurationKey.error(
                    "BacklotPlatform", source: source, "must be iOS, macOS, tvOS, visionOS or linux, not \(p)")
            }
            self.platform = platform
        }
        if settings["BAInitialDownloadRestrictions"] != nil {
            do {
                restrictions = try DownloadRestrictions(
                    infoPlist: .dictionary(settings), manifestURLElsewhere: catalogKey == "BacklotCatalogURL")
            } catch let e as BacklotError {
                throw BacklotError(
                    .invalidInput,
                    "the key BAInitialDownloadRestrictions (or an install size key) is invalid: \(e.message)",
                    context: source, hint: e.hint)
            }
        } else if settings["BAMaxInstallSize"] != nil || settings["BAEssentialMaxInstallSize"] != nil {
            var sizeCaps = DownloadRestrictions(
                downloadAllowance: .max, essentialDownloadAllowance: .max, domainAllowList: [],
                maxInstallSize: try ConfigurationKey.bytes("BAMaxInstallSize", in: settings, source: source),
                essentialMaxInstallSize: try ConfigurationKey.bytes(
                    "BAEssentialMaxInstallSize", in: settings, source: source))
            sizeCaps.appliesBeforeFirstLaunch = false
            restrictions = sizeCaps
        }
        appGroupID = try ConfigurationKey.string("BAAppGroupID", in: settings, source: source)
        extensionPath = try ConfigurationKey.string("BacklotExtensionPath", in: settings, source: source).map(path)
        if let e = extensionPath, !FileManager.default.isExecutableFile(atPath: e) {
            throw ConfigurationKey.error(
                "BacklotExtensionPath", source: source, "names \(e), which is not an executable file")
        }
        extensionTimeLimit =
            try ConfigurationKey.seconds("BacklotExtensionTimeLimit", in: settings, source: source)
            ?? extensionTimeLimit
        extensionDailyBudget =
            try ConfigurationKey.seconds("BacklotExtensionDailyBudget", in: settings, source: source)
            ?? extensionDailyBudget
        appExecutable = try ConfigurationKey.string("BacklotAppExecutable", in: settings, source: source).map(path)
        if let e = appExecutable, !FileManager.default.isExecutableFile(atPath: e) {
            throw ConfigurationKey.error(
                "BacklotAppExecutable", source: source, "names \(e), which is not an executable file")
        }
        preferredLanguages = try Self.preferredLanguages(in: settings, source: source)
        if let args = settings["BacklotAppArguments"] {
            guard let list = args.array?.compactMap(\.string), list.count == args.array?.count else {
                throw ConfigurationKey.error("BacklotAppArguments", source: source, "must be an array of strings")
            }
            appArguments = list
        }
        prefetchRequiresUnmetered =
            try ConfigurationKey.bool("BacklotPrefetchRequiresUnmetered", in: settings, source: source) ?? true
        networkMetered = try ConfigurationKey.bool("BacklotNetworkMetered", in: settings, source: source) ?? false
        sendsReports = try ConfigurationKey.bool("BacklotSendsReports", in: settings, source: source) ?? true
        if let text = try ConfigurationKey.string("BacklotDeviceProfile", in: settings, source: source) {
            deviceProfile = try DeviceProfile.detected(
                overriddenBy: text, label: "the key BacklotDeviceProfile", context: source)
        }
        // Floors: below them a round (or a catalog check) would follow the last without rest.
        periodicCheckInterval =
            try ConfigurationKey.seconds("BacklotPeriodicCheckInterval", in: settings, source: source, atLeast: 60)
            ?? periodicCheckInterval
        pollInterval =
            try ConfigurationKey.seconds("BacklotPollInterval", in: settings, source: source, atLeast: 0.05)
            ?? pollInterval
        bandwidthLimit = try ConfigurationKey.bytes("BacklotBandwidthLimit", in: settings, source: source) ?? 0
        minimumFreeSpace =
            try ConfigurationKey.bytes("BacklotMinimumFreeSpace", in: settings, source: source) ?? minimumFreeSpace
        maximumRangeBytes =
            try ConfigurationKey.bytes("BacklotMaximumRangeBytes", in: settings, source: source) ?? maximumRangeBytes
        guard maximumRangeBytes >= 64 << 10 else {
            throw ConfigurationKey.error("BacklotMaximumRangeBytes", source: source, "must be at least 65536 bytes")
        }
        peers = try PeerDirectory(settings: settings, source: source)
        peerCache = try PeerCacheSettings(settings: settings, source: source)
        scheduler = try TaskSchedulerConfiguration(settings: settings, source: source, databasePath: databasePath)
    }

    /// `BacklotPreferredLanguages` as the configuration file at `path` says it now (nil when absent).
    /// - Throws: ``BacklotError`` when the file cannot be read or the key is wrong.
    public static func preferredLanguages(atPath path: String) throws -> [String]? {
        let (root, _) = try ConfigurationFile.load(path: path)
        return try preferredLanguages(in: root.dictionary ?? [:], source: path)
    }

    /// `BacklotPreferredLanguages` of a configuration: nil when absent.
    /// - Throws: ``BacklotError`` (`invalidInput`) naming the key when it is not an array of language tags.
    static func preferredLanguages(in settings: [String: PlistValue], source: String) throws -> [String]? {
        guard let value = settings["BacklotPreferredLanguages"] else { return nil }
        let rule = "an array of at most 64 BCP-47 language tags, most preferred first (\"fr-CA\", \"en\")"
        guard let elements = value.array, elements.count <= 64 else {
            throw ConfigurationKey.error("BacklotPreferredLanguages", source: source, "must be \(rule)")
        }
        return try elements.enumerated().map { index, element in
            guard let tag = element.string, isLanguageTag(tag) else {
                throw ConfigurationKey.error(
                    "BacklotPreferredLanguages", source: source,
                    "element \(index) (\(element.string.map { "\"\($0.prefix(64))\"" } ?? "not a string")) is not a language tag: it must be \(rule)"
                )
            }
            return tag
        }
    }

    /// A BCP-47 tag as a configuration writes it: a primary subtag of 2 to 8 ASCII letters, then
    /// subtags of 1 to 8 ASCII letters or digits, separated by `-` (or `_`, as `LANG` writes them).
    static func isLanguageTag(_ tag: String) -> Bool {
        let parts = tag.split(separator: "-", omittingEmptySubsequences: false).flatMap {
            $0.split(separator: "_", omittingEmptySubsequences: false)
        }
        guard let first = parts.first, (2...8).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter })
        else { return false }
        return parts.dropFirst().allSatisfy { p in
            (1...8).contains(p.count) && p.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
        }
    }

    /// Whether `host` names this machine (127.0.0.0/8, ::1, localhost).
    static func isLoopback(_ host: String) -> Bool {
        let h = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        return h == "localhost" || h == "::1" || h.hasPrefix("127.") && h.split(separator: ".").count == 4
    }

    /// The client library's configuration for the container.
    func managerConfiguration(containerPath: String) -> AssetPackManager.Configuration {
        var c = AssetPackManager.Configuration(
            containerPath: containerPath, catalogURL: catalogURL, app: app, channel: channel,
            trustedKeys: trustedKeys, platform: platform, caFile: caFile, bandwidthLimit: Int(clamping: bandwidthLimit))
        c.isAppClip = scheduler.isAppClip
        c.maximumRangeBytes = maximumRangeBytes
        c.sendsReports = sendsReports
        c.deviceProfile = deviceProfile
        c.peers = peers
        return c
    }
}
