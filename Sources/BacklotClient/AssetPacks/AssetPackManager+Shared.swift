import BacklotBasics
import BacklotFormat
import BacklotInfoPlist
import BacklotProtocol
import Foundation

/// The process's manager, as on Apple's platforms (`AssetPackManager.shared`), configured from the
/// environment and the app's configuration: the keys `backlot agent` reads.
extension AssetPackManager {
    /// The environment variable naming the container folder (the app group's container on Apple's platforms).
    public static let containerEnvironmentKey = "BACKLOT_CONTAINER"
    /// The environment variable naming the app's configuration: its Info.plist (XML or binary) or
    /// a JSON file with the same keys (docs/app-guide.md). Without it, an `Info.plist` beside the
    /// executable is read, as an app bundle's would be.
    public static let configurationEnvironmentKey = "BACKLOT_CONFIG"

    /// The shared manager (Apple's `AssetPackManager.shared`), made the first time it is used from
    /// ``Configuration/fromEnvironment(_:executablePath:)``.
    ///
    /// ```swift
    /// // BACKLOT_CONTAINER=/var/lib/game BACKLOT_CONFIG=/opt/game/Info.plist ./GameApp
    /// let pack = try await AssetPackManager.shared.assetPack(withID: "Tutorial")
    /// try await AssetPackManager.shared.ensureLocalAvailability(of: pack)
    /// ```
    ///
    /// As Apple's does when the app lacks `BAAppGroupID` or its extension, it stops the process
    /// when the app is not configured, with a message naming the missing environment variable or
    /// key (and what to put there). Check first with ``Configuration/fromEnvironment(_:executablePath:)``
    /// where a trap is not wanted, or make a manager with ``init(configuration:)``.
    public static let shared: AssetPackManager = {
        do {
            return try AssetPackManager(configuration: .fromEnvironment())
        } catch {
            fatalError("AssetPackManager.shared cannot be made: \(error)")
        }
    }()
}

extension AssetPackManager.Configuration {
    /// The configuration of the running app: the container from `BACKLOT_CONTAINER`; the catalog
    /// (`BacklotCatalogURL`, or `BAManifestURL` when it is the catalog), the trusted key
    /// (`BacklotTrustedKey`, a path relative to the file), and optionally `BacklotCAFile`,
    /// `BacklotPlatform`, `BacklotBandwidthLimit`, `BacklotSendsReports`, `BacklotDeviceProfile`, `BacklotPeers` and `BacklotPeerDiscovery` from the file `BACKLOT_CONFIG` names (or the `Info.plist` beside the
    /// executable). Other keys are left to `backlot agent`, which checks them.
    ///
    /// ```swift
    /// let configuration = try AssetPackManager.Configuration.fromEnvironment()
    /// let manager = try AssetPackManager(configuration: configuration)
    /// ```
    /// - Throws: ``BacklotError/Code/usage`` naming the environment variable or the key that is
    ///   missing; ``BacklotError/Code/invalidInput`` naming the key whose value is wrong; what
    ///   reading the file throws.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment,
        executablePath: String? = Bundle.main.executablePath
    ) throws -> Self {
        let containerKey = AssetPackManager.containerEnvironmentKey
        let configKey = AssetPackManager.configurationEnvironmentKey
        guard let container = environment[containerKey], !container.isEmpty else {
            throw BacklotError(
                .usage, "\(containerKey) is not set: name the app's container folder (the one backlot agent is given)",
                context: "environment",
                hint: "the app's configuration is described in docs/app-guide.md and docs/porting.md")
        }
        let source: String
        if let path = environment[configKey], !path.isEmpty {
            source = URL(fileURLWithPath: path).standardizedFileURL.path
        } else if let executablePath,
            FileSystem.exists(URL(fileURLWithPath: executablePath).deletingLastPathComponent().path + "/Info.plist")
        {
            source = URL(fileURLWithPath: executablePath).deletingLastPathComponent().path + "/Info.plist"
        } else {
            throw BacklotError(
                .usage,
                "\(configKey) is not set and no Info.plist is beside the executable: name the app's Info.plist or JSON configuration (BacklotCatalogURL, BacklotTrustedKey)",
                context: "environment", hint: "the keys are described in docs/app-guide.md")
        }
        guard let settings = try ConfigurationFile.read(path: source).dictionary else {
            throw BacklotError(.invalidInput, "the configuration must be a dictionary of keys", context: source)
        }
        let base = URL(fileURLWithPath: source).deletingLastPathComponent().path
        func path(_ p: String) -> String { p.hasPrefix("/") ? p : base + "/" + p }
        func string(_ key: String) throws -> String? {
            guard let value = settings[key] else { return nil }
            guard let s = value.string, !s.isEmpty else {
                throw BacklotError(
                    .invalidInput, "the key \(key) must be a non-empty string, not \(value.typeName)", context: source)
            }
            return s
        }
        let catalogKey = settings["BacklotCatalogURL"] != nil ? "BacklotCatalogURL" : "BAManifestURL"
        guard let text = try string(catalogKey) else {
            throw BacklotError(
                .usage,
                "the configuration lacks BacklotCatalogURL: give the catalog URL (…/\(PublishedTreeLayout.catalogTemplate)) there or as BAManifestURL",
                context: source)
        }
        guard let url = URL(string: text), let target = try? Self.target(ofCatalogURL: url) else {
            throw BacklotError(
                .invalidInput,
                "the key \(catalogKey) must be a Backlot catalog URL (http(s)://HOST/…/\(PublishedTreeLayout.catalogTemplate)), not \(text)",
                context: source)
        }
        guard let keyFile = try string("BacklotTrustedKey") else {
            throw BacklotError(
                .usage,
                "the configuration lacks BacklotTrustedKey: name the repository's public key file (its root.pub)",
                context: source)
        }
        let key = try PublicKeyFile.read(path: path(keyFile))
        var platform = Platform.linux
        if let p = try string("BacklotPlatform") {
            guard let parsed = Platform(rawValue: p) else {
                throw BacklotError(
                    .invalidInput, "the key BacklotPlatform must be iOS, macOS, tvOS, visionOS or linux, not \(p)",
                    context: source)
            }
            platform = parsed
        }
        var limit = 0
        if let value = settings["BacklotBandwidthLimit"] {
            guard case .integer(let n) = value, n >= 0, let bytes = Int(exactly: n) else {
                throw BacklotError(
                    .invalidInput, "the key BacklotBandwidthLimit must be a number of bytes per second (0: no limit)",
                    context: source)
            }
            limit = bytes
        }
        var configuration = Self(
            containerPath: container, catalogURL: url, app: target.app, channel: target.channel, trustedKeys: [key],
            platform: platform, caFile: try string("BacklotCAFile").map(path), bandwidthLimit: limit)
        if let value = settings["BacklotSendsReports"] {
            guard case .bool(let sends) = value else {
                throw BacklotError(
                    .invalidInput, "the key BacklotSendsReports must be true or false, not \(value.typeName)",
                    context: source)
            }
            configuration.sendsReports = sends
        }
        if let text = try string("BacklotDeviceProfile") {
            configuration.deviceProfile = try DeviceProfile.detected(
                overriddenBy: text, label: "the key BacklotDeviceProfile", context: source)
        }
        configuration.peers = try PeerDirectory(settings: settings, source: source)
        return configuration
    }
}
