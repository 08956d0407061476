import BacklotBasics
import BacklotContainer
import BacklotCrypto
import BacklotFormat
import BacklotHTTPClient
import BacklotJSON
import BacklotProtocol
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Downloads, updates and opens asset packs from a Backlot repository (Apple's `AssetPackManager`).
///
/// ```swift
/// let manager = try AssetPackManager(configuration: .init(
///     containerPath: "/var/lib/mygame/assets", catalogURL: URL(string: "https://cdn.example.com/v1/apps/com.example.game/production/catalog.json")!,
///     app: "com.example.game", channel: .production, trustedKeys: [pinned], platform: .linux))
/// let pack = try await manager.assetPack(withID: "Levels")
/// try await manager.ensureLocalAvailability(of: pack)
/// let level = try manager.contents(at: "Levels/level1.json")
/// ```
///
/// Trust fails closed: the catalog must be signed by a pinned key (rotations are followed), be for
/// this app and channel, unexpired, and never older than one already seen; archives must match the
/// catalog and every chunk its SHA-256. A failure leaves the installed release untouched.
public actor AssetPackManager {
    /// Where the container is and which catalog it follows.
    public struct Configuration: Sendable {
        /// The container folder, shared by the app and the background agent.
        public var containerPath: String
        /// The channel's catalog (`…/v1/apps/APP/CHANNEL/catalog.json`).
        public var catalogURL: URL
        public var app: String
        public var channel: Channel
        /// Pinned repository keys (the server's `root.pub`).
        public var trustedKeys: [Ed25519.PublicKey]
        /// Packs not built for this platform are not offered.
        public var platform: Platform
        /// A CA file for development servers (`backlot serve`'s `tls/ca.pem`).
        public var caFile: String?
        /// Bytes per second to receive at most, per connection (0: no limit).
        public var bandwidthLimit: Int
        /// Seconds without progress after which a request fails (and is retried).
        public var stallTimeout: Int = 60
        /// The slowest rate, in bytes per second, a transfer may keep: every request (catalog, key
        /// list, header, index, range) has a deadline of its bounded size at this rate plus 30 s
        /// (``HTTPClient/minimumRate``), so a server that drips bytes cannot hold the client.
        public var minimumRate: Int = 4096
        /// Attempts after the first for a failed Range request (exponential backoff with jitter, or `Retry-After`).
        public var retries: Int = 4
        /// The largest Range request; progress is recorded after each one, so smaller ranges lose
        /// less to an interruption and larger ones cost fewer requests.
        public var maximumRangeBytes: UInt64 = 2 << 20
        /// The container belongs to an App Clip: installation events fetch no essential packs (a
        /// clip has no install-time phase), while ``AssetPackManager/ensureLocalAvailability(of:requireLatestVersion:)``
        /// works for packs of every policy.
        public var isAppClip = false
        /// Whether the device reports the releases it holds and its installs' outcomes, in
        /// aggregate and without an identifier (``AssetPackManager/DeviceReporter``, docs/privacy.md):
        /// the studio's adoption figures and what halts a phased rollout. A Backlot addition; the
        /// configuration key `BacklotSendsReports`.
        public var sendsReports = true
        /// What picks the variant of a pack with variants (texture formats, device tiers;
        /// docs/format.md §3.2) this device installs; nil (the default) for the profile detected
        /// (``BacklotFormat/DeviceProfile/detected``). A Backlot addition; the configuration key
        /// `BacklotDeviceProfile` (`textureFormat=astc,deviceTier=high`).
        public var deviceProfile: DeviceProfile?
        /// LAN peer caches asked for chunks before the origin: a static list (`http://HOST:PORT`,
        /// the key `BacklotPeers`) and, with ``PeerDirectory/discovers``, those advertised on the
        /// local link (`BacklotPeerDiscovery`). Off by default: asking tells a neighbour which
        /// chunks this device lacks (docs/privacy.md). A Backlot addition.
        public var peers = PeerDirectory()

        /// The app and channel a catalog URL names (`…/v1/apps/APP/CHANNEL/catalog.json`).
        /// - Throws: ``BacklotError/Code/usage`` when the URL is not of that shape.
        public static func target(ofCatalogURL url: URL) throws -> (app: String, channel: Channel) {
            let parts = BytePath.components(url.path, omittingEmpty: true)
            guard url.scheme == "https" || url.scheme == "http", parts.count >= 5,
                case .catalog(let app, let channel)? = PublishedTreeLayout(path: parts.suffix(5).joined(separator: "/")),
                (try? PackID(app)) != nil
            else {
                throw BacklotError(
                    .usage, "a catalog URL is http(s) and ends in /\(PublishedTreeLayout.catalogTemplate)",
                    context: url.absoluteString)
            }
            return (app, channel)
        }

        /// A configuration from what an app ships: the catalog URL (its app and channel are read
        /// from it) and the repository's public key file (the server's `root.pub`).
        ///
        /// ```swift
        /// let manager = try AssetPackManager(configuration: .init(
        ///     containerPath: container, catalogURL: URL(string: "https://cdn.example.com/v1/apps/com.example.game/production/catalog.json")!,
        ///     trustedKeyFile: "root.pub"))
        /// ```
        /// - Throws: ``BacklotError/Code/usage`` for a URL that is not a catalog's,
        ///   ``BacklotError/Code/invalidInput`` for a key file that is not a public key.
        public init(
            containerPath: String, catalogURL: URL, trustedKeyFile: String, platform: Platform = .linux,
            caFile: String? = nil
        ) throws {
            let target = try Self.target(ofCatalogURL: catalogURL)
            self.init(
                containerPath: containerPath, catalogURL: catalogURL, app: target.app, channel: target.channel,
                trustedKeys: [try PublicKeyFile.read(path: trustedKeyFile)], platform: platform, caFile: caFile)
        }

        public init(
            containerPath: String, catalogURL: URL, app: String, channel: Channel, trustedKeys: [Ed25519.PublicKey],
            platform: Platform = .linux, caFile: String? = nil, bandwidthLimit: Int = 0
        ) {
            self.containerPath = containerPath
            self.catalogURL = catalogURL
            self.app = app
            self.channel = channel
            self.trustedKeys = trustedKeys
            self.platform = platform
            self.caFile = caFile
            self.bandwidthLimit = bandwidthLimit
        }
    }

    public nonisolated let configuration: Configuration
    nonisolated let container: ClientContainer
    /// The languages of the localized packs of the catalog last read (``resolvedLanguage``).
    nonisolated let knownLanguages = Mutex<[String]>([])
    /// The device's preferred languages as the agent's configuration names them (``setPreferredLanguages(_:)``).
    nonisolated let configuredLanguages = Mutex<[String]?>(nil)
    nonisolated let catalogClient: CatalogClient
    nonisolated let http: HTTPClient
    nonisolated let reporter: DeviceReporter
    private var inFlight: [String: Task<Void, any Error>] = [:]
    /// The last report of each pack's download by this manager (``lastFetchReport(forPackWithID:)``).
    nonisolated let lastReports = Mutex<[String: FetchReport]>([:])
    /// The last catalog check's `Backlot-Check-After` (``checkAfterHint``).
    nonisolated let lastCheckAfter = Mutex<Int?>(nil)
    nonisolated let broadcaster = Broadcaster()
    /// This manager's identity in the container's request queue.
    nonisolated let clientID = UUID().uuidString.lowercased()

    public init(configuration: Configuration) throws {
        self.configuration = configuration
        container = try ClientContainer(path: configuration.containerPath)
        if configuration.isAppClip { try container.markAppClip() }
        var http = HTTPClient(
            caFile: configuration.caFile, stallTimeout: configuration.stallTimeout,
            bandwidthLimit: configuration.bandwidthLimit,
            minimumRate: configuration.minimumRate)
        if PackID.problem(with: configuration.app) == nil {
            http.defaultHeaders[PublishedTreeLayout.appHeader] = configuration.app
        }
        // A check's requests (catalog, key lists) and each download connection's Range requests
        // share connections: one TLS handshake rather than one per request.
        http.connectionCache = try HTTPClient.ConnectionCache()
        self.http = http
        reporter = DeviceReporter(
            container: container, http: http, catalogURL: configuration.catalogURL, app: configuration.app,
            channel: configuration.channel, enabled: configuration.sendsReports)
        catalogClient = CatalogClient(
            catalogURL: configuration.catalogURL, app: configuration.app, channel: configuration.channel,
            pinned: configuration.trustedKeys, http: http, container: container)
    }

    /// Seconds the answer to this manager's last catalog check asked the device to wait before
    /// checking again (`Backlot-Check-After`, docs/protocol.md §4.1; a Backlot addition), at most a
    /// day; nil when it named none or no catalog was read yet. The agent schedules its next periodic
    /// check no sooner (``CheckSchedule``).
    public nonisolated var checkAfterHint: Int? { lastCheckAfter.withLock { $0 } }

    /// The device identifier used for staged rollouts (created once per container).
    public nonisolated var deviceID: String { container.deviceID }

    // MARK: Catalog

    /// The catalog's packs for this device and platform, by ID.
    func offered() async throws -> [String: (AssetPack, Catalog.Release)] {
        try await BlockingPool.shared.run { try self.offeredNow() }
    }

    /// ``offered()`` on the calling thread; it keeps the answer's `Backlot-Check-After` (``checkAfterHint``).
    nonisolated func offeredNow() throws -> [String: (AssetPack, Catalog.Release)] {
        let (catalog, hint) = try catalogClient.check()
        lastCheckAfter.withLock { $0 = hint }
        defer { knownLanguages.withLock { $0 = Array(Set(catalog.packs.compactMap { $0.release.language })) } }
        var out: [String: (AssetPack, Catalog.Release)] = [:]
        for entry in catalog.packs {
            // A candidate not built for this platform is no candidate here: the device stays on the
            // live release (it never loses a pack to a staged rollout).
            var release = entry.release(forDevice: deviceID)
            if !release.platforms.contains(configuration.platform) { release = entry.release }
            guard release.platforms.contains(configuration.platform) else { continue }
            out[entry.id.rawValue] = (Self.pack(entry.id.rawValue, release), release)
        }
        return out
    }

    static func pack(_ id: String, _ r: Catalog.Release) -> AssetPack {
        AssetPack(
            id: id, downloadSize: Int(r.archiveSize), version: r.version, userInfo: r.userInfo, language: r.language,
            downloadPolicy: r.downloadPolicy, digest: r.indexSHA256.hex)
    }

    /// The pack with this ID, as the catalog describes it now.
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)``, or a trust or network error.
    public func assetPack(withID id: String) async throws -> AssetPack {
        guard let (pack, _) = try await offered()[id] else {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: id)
        }
        return pack
    }

    /// Every pack the catalog offers this device.
    public var allAssetPacks: Set<AssetPack> {
        get async throws { Set(try await offered().values.map(\.0)) }
    }

    // MARK: Downloads

    /// Returns once the pack is installed and verified. With `requireLatestVersion` false (the
    /// default, as Apple's), an installed release is used as it is and the catalog is not
    /// consulted; with true, an older installed release is updated first.
    public func ensureLocalAvailability(of pack: AssetPack, requireLatestVersion: Bool = false) async throws {
        if !requireLatestVersion, (try? container.installed(pack.id)) != nil { return }
        _ = try await fetch(packWithID: pack.id)
    }

    /// What one fetch did (a Backlot addition to Apple's API, for tools and tests).
    public struct FetchReport: Sendable, Hashable, Codable {
        public let id: String
        public let version: Int
        /// Bytes that came over the network for this pack (0 when it was up to date).
        public let downloadedBytes: UInt64
        public let downloadedChunks: Int
        public let reusedChunks: Int
        public let linkedFiles: Int
        /// Bytes and chunks that came from LAN peer caches (docs/peer-cache.md), each checked
        /// against the signed index; ``downloadedBytes`` counts the origin's.
        public var peerBytes: UInt64 = 0
        public var peerChunks = 0
        /// Peers dropped during the install (by URL), and why: a wrong or short chunk, no answer in time.
        public var bannedPeers: [String: String] = [:]

        init(
            id: String, version: Int, downloadedBytes: UInt64, downloadedChunks: Int, reusedChunks: Int,
            linkedFiles: Int, peerBytes: UInt64 = 0, peerChunks: Int = 0, bannedPeers: [String: String] = [:]
        ) {
            self.id = id
            self.version = version
            self.downloadedBytes = downloadedBytes
            self.downloadedChunks = downloadedChunks
            self.reusedChunks = reusedChunks
            self.linkedFiles = linkedFiles
            self.peerBytes = peerBytes
            self.peerChunks = peerChunks
            self.bannedPeers = bannedPeers
        }

        private enum CodingKeys: String, CodingKey {
            case id, version, downloadedBytes, downloadedChunks, reusedChunks, linkedFiles, peerBytes, peerChunks,
                bannedPeers
        }

        /// A report as stored; one written before peers existed has none of their figures.
        /// Reads a report another process of the container recorded: every count must be from 0
        /// to 2^40 (what a pack can hold), so that no sum or conversion of them can trap.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            func count(_ key: CodingKeys, _ value: Int?) throws -> Int {
                guard let value else { return 0 }
                guard (0...(1 << 40)).contains(value) else {
                    throw DecodingError.dataCorruptedError(
                        forKey: key, in: c, debugDescription: "\(value) is not a count (0…2^40)")
                }
                return value
            }
            self.init(
                id: try c.decode(String.self, forKey: .id),
                version: try count(.version, try c.decode(Int.self, forKey: .version)),
                downloadedBytes: try c.decode(UInt64.self, forKey: .downloadedBytes),
                downloadedChunks: try count(.downloadedChunks, try c.decode(Int.self, forKey: .downloadedChunks)),
                reusedChunks: try count(.reusedChunks, try c.decode(Int.self, forKey: .reusedChunks)),
                linkedFiles: try count(.linkedFiles, try c.decode(Int.self, forKey: .linkedFiles)),
                peerBytes: try c.decodeIfPresent(UInt64.self, forKey: .peerBytes) ?? 0,
                peerChunks: try count(.peerChunks, try c.decodeIfPresent(Int.self, forKey: .peerChunks)),
                bannedPeers: try c.decodeIfPresent([String: String].self, forKey: .bannedPeers) ?? [:])
        }
    }

    /// Installs the catalog's current release of a pack if it is not installed yet, and says what it cost.
    public func fetch(packWithID id: String) async throws -> FetchReport {
        if let running = inFlight[id] {
            try await running.value
            return FetchReport(
                id: id, version: (try? container.installed(id))?.version ?? 0, downloadedBytes: 0, downloadedChunks: 0,
                reusedChunks: 0, linkedFiles: 0)
        }
        let report = Mutex<FetchReport?>(nil)
        let task = Task {
            let r = try await self.runOrQueue(id)
            report.withLock { $0 = r }
        }
        inFlight[id] = task
        defer { inFlight[id] = nil }
        do {
            // The caller's cancellation reaches the download (an unstructured task does not
            // inherit it): one queued behind another process's then takes its request back.
            try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
        } catch {
            await sendReportIfDue()
            throw error
        }
        await sendReportIfDue()
        let done = report.withLock { $0 }!
        lastReports.withLock { $0[id] = done }
        return done
    }

    /// What the last download of a pack by this manager did: its bytes from the origin and from
    /// LAN peers, chunks reused and files linked (a Backlot addition; `backlot_last_fetch` in C).
    /// Nil when this manager has not fetched the pack.
    ///
    /// ```swift
    /// try await manager.ensureLocalAvailability(of: pack)
    /// if let report = manager.lastFetchReport(forPackWithID: pack.id) { print(report.peerBytes) }
    /// ```
    public nonisolated func lastFetchReport(forPackWithID id: String) -> FetchReport? {
        lastReports.withLock { $0[id] }
    }

    /// An installer with this manager's retry and range settings.
    nonisolated func makeInstaller() -> PackInstaller {
        var installer = PackInstaller(container: container, http: http)
        installer.retries = configuration.retries
        installer.maximumRangeBytes = max(64 << 10, configuration.maximumRangeBytes)
        installer.profile = deviceProfile
        return installer
    }

    /// The profile that picks this device's variant of a pack with variants: the configuration's
    /// ``Configuration/deviceProfile``, else the one detected (``BacklotFormat/DeviceProfile/detected``).
    public nonisolated var deviceProfile: DeviceProfile { configuration.deviceProfile ?? .detected }

    /// The name `release` is installed under on this device (``ReleaseName``).
    nonisolated func installedName(_ release: Catalog.Release) -> String {
        ReleaseName.of(release, profile: deviceProfile)
    }

    /// Every update of every download; never finishes.
    public nonisolated var statusUpdates: AsyncStream<DownloadStatusUpdate> { broadcaster.stream(for: nil) }

    /// The updates of one pack's download; finishes after `.finished` or `.failed`.
    public nonisolated func statusUpdates(forAssetPackWithID id: String) -> AsyncStream<DownloadStatusUpdate> {
        broadcaster.stream(for: id)
    }

    /// Downloads the packs an installation event fetches: essential and prefetch packs whose
    /// `installationEventTypes` include it (the call the background agent makes). In an App Clip
    /// (``Configuration/isAppClip``) essential packs are skipped: a clip has no install-time phase.
    /// - Returns: the IDs of the packs it made available.
    @discardableResult
    public func handle(event: InstallationEventType) async throws -> [String] {
        var done: [String] = []
        for (id, (pack, release)) in try await offered().sorted(by: { $0.key < $1.key })
        where release.downloadPolicy.installationEventTypes.contains(event) {
            if container.isMarkedAppClip, case .essential = release.downloadPolicy { continue }
            try await ensureLocalAvailability(of: pack, requireLatestVersion: true)
            done.append(id)
        }
        await sendReportIfDue()
        return done
    }

    /// Sends the device's report when one is due (``DeviceReporter``); never fails.
    func sendReportIfDue() async {
        let reporter = self.reporter
        _ = try? await BlockingPool.shared.run { reporter.sendIfDue() }
    }

    /// Checks every installed file against its SHA-256 (offline).
    /// - Returns: the damaged files, as "PACK: path".
    public nonisolated func verifyInstalled() throws -> [String] {
        try ClientContainer.verify(path: container.path)
    }

    /// Rebuilds installed packs that have damaged files, fetching only what is needed.
    /// - Returns: the IDs repaired.
    public func repair() async throws -> [String] {
        let damagedPacks = Set(try verifyInstalled().map { String($0.prefix { $0 != ":" }) })
        let offered = try await offered()
        var repaired: [String] = []
        for id in damagedPacks.sorted() {
            guard let installed = try container.installed(id), let (_, release) = offered[id] else { continue }
            let url = try catalogClient.archiveURL(release)
            let installer = makeInstaller()
            let box = ProgressBox(Progress(totalUnitCount: Int64(max(1, release.installSize))))
            let repairing = installedName(release) == installed.digest
            _ = try await BlockingPool.longRunning.run { [installer] in
                try self.install(id, release, from: url, with: installer, progress: box, repairing: repairing)
            }
            repaired.append(id)
        }
        return repaired
    }

    // MARK: Status

    /// The pack's status against the catalog.
    public func status(ofAssetPackWithID id: String) async throws -> AssetPack.Status {
        let offered = try await offered()
        var status = localStatus(ofAssetPackWithID: id)
        let installed = try? container.installed(id)
        if let (_, release) = offered[id] {
            if let installed {
                status.insert(installed.digest == installedName(release) ? .upToDate : [.outOfDate, .updateAvailable])
            } else {
                status.insert(.downloadAvailable)
            }
        } else if installed != nil {
            status.insert(.obsolete)
        } else {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: id)
        }
        return status
    }

    /// What is known without the network: downloaded, downloading, or nothing (an unknown ID).
    public func localStatus(ofAssetPackWithID id: String) -> AssetPack.Status {
        var status: AssetPack.Status = []
        if (try? container.installed(id)) != nil { status.insert(.downloaded) }
        if inFlight[id] != nil { status.insert(.downloading) }
        return status
    }

    /// Whether a release of the pack is installed.
    public nonisolated func assetPackIsAvailableLocally(withID id: String) -> Bool {
        (try? container.installed(id)) != nil
    }

    /// Updates out-of-date packs and removes obsolete ones. `removedIDs` also names, once, the
    /// packs the agent deleted to free space since the last call (``ClientContainer/reclaimSpace(minimumFree:)``).
    @discardableResult
    public func checkForUpdates() async throws -> (updatingIDs: Set<String>, removedIDs: Set<String>) {
        let offered = try await offered()
        var updating = Set<String>()
        var removed = Set<String>()
        for installed in try container.installed() {
            if let (pack, release) = offered[installed.id] {
                if installed.digest != installedName(release) {
                    updating.insert(installed.id)
                    try await ensureLocalAvailability(of: pack, requireLatestVersion: true)
                }
            } else {
                try await remove(assetPackWithID: installed.id)
                removed.insert(installed.id)
            }
        }
        // Packs the agent deleted to free space are reported once, as removed.
        removed.formUnion(try container.takeEvictedPacks())
        await sendReportIfDue()
        return (updating, removed)
    }

    /// Makes several packs available at once (Apple's batch form, iOS 27): their downloads run
    /// together, and it returns when all are installed.
    /// - Parameter requireLatestVersions: also update the packs installed at an older release.
    /// - Throws: ``LocalAvailabilityError`` once every pack has ended, when some failed: it names
    ///   the packs that are available and each failure with its error.
    public func ensureLocalAvailability(
        of assetPacks: Set<AssetPack>, requireLatestVersions shouldUpdate: Bool = false
    ) async throws {
        try await ensureEach(assetPacks) { pack in
            try await self.ensureLocalAvailability(of: pack, requireLatestVersion: shouldUpdate)
        }
    }

    /// Frees space on the container's file system when it has less than `minimumFree` bytes
    /// available (what the agent does each round): ``ClientContainer/reclaimSpace(minimumFree:)``.
    public nonisolated func reclaimSpace(minimumFree: UInt64) throws -> [ClientContainer.Reclaimed] {
        try container.reclaimSpace(minimumFree: minimumFree)
    }

    /// Removes an installed pack.
    public func remove(assetPackWithID id: String) async throws {
        try container.remove(id)
    }

    // MARK: Files

    /// Where the file `path` of an installed pack is (a Backlot addition, for callers that open
    /// files themselves: libbacklot's `backlot_path`, a game engine's own file loader). Installed
    /// packs are searched as ``contents(at:searchingInAssetPackWithID:options:)`` searches them.
    ///
    /// ```swift
    /// let file = try manager.path(for: "Levels/level1.json")   // "/…/container/packs/Levels/…/Levels/level1.json"
    /// ```
    /// - Throws: ``ManagedBackgroundAssetsError`` when no installed pack holds the file.
    public nonisolated func path(for path: String, searchingInAssetPackWithID id: String? = nil) throws -> String {
        try resolve(path, in: id)
    }

    /// Installed packs searched for `path`: the one named, or all of them in pack-ID order (the
    /// first pack, by the UTF-8 bytes of its ID, that holds the path wins).
    nonisolated func resolve(_ path: String, in id: String?) throws -> String {
        let packs = try container.installed().filter { id == nil || $0.id == id }
        if let id, packs.isEmpty { throw ManagedBackgroundAssetsError.assetPackNotFound(withID: id) }
        return try resolve(path, among: packs)
    }

    /// The first of `packs`, in pack-ID order, that holds `path`.
    nonisolated func resolve(_ path: String, among packs: [ClientContainer.Installed]) throws -> String {
        guard case .success(let clean) = SelectorPath.normalize(path, allowRoot: false) else {
            throw ManagedBackgroundAssetsError.fileNotFound(at: path)
        }
        for p in packs.sorted(by: { Array($0.id.utf8).lexicographicallyPrecedes(Array($1.id.utf8)) }) {
            let full = container.releaseFolder(p.id, digest: p.digest) + "/" + clean
            if (try? FileSystem.linkStatus(full))??.kind == .regular { return full }
        }
        throw ManagedBackgroundAssetsError.fileNotFound(at: path)
    }

    /// A file's contents, memory-mapped by default.
    public nonisolated func contents(
        at path: String, searchingInAssetPackWithID id: String? = nil,
        options: Data.ReadingOptions = .alwaysMapped
    ) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: try resolve(path, in: id)), options: options)
    }

    /// An open, read-only handle of a file (Apple's returns a descriptor the caller closes): close
    /// it with `try handle.close()`; one not closed is closed when it is released.
    ///
    /// ```swift
    /// let video = try manager.descriptor(for: "Videos/Introduction.m4v")
    /// defer { try? video.close() }
    /// ```
    /// - Throws: ``ManagedBackgroundAssetsError`` when no installed pack holds the file, or the error of `open`.
    public nonisolated func descriptor(
        for path: String, searchingInAssetPackWithID id: String? = nil
    ) throws -> FileHandle {
        try openReadOnly(try resolve(path, in: id))
    }

    /// A read-only handle of a resolved file, closed when it is released.
    nonisolated func openReadOnly(_ full: String) throws -> FileHandle {
        let fd = open(full, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemCall.error("open", path: full) }
        return FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }

    /// The URL of the file that `path` resolves to in the merged namespace (a path no pack holds
    /// resolves under the container's `missing` folder, which never exists).
    public nonisolated func url(for path: String) -> URL {
        if let full = try? resolve(path, in: nil) { return URL(fileURLWithPath: full) }
        return URL(fileURLWithPath: container.layout.missingFolder + "/" + path)
    }
}
