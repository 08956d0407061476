import BacklotBasics
import BacklotClient
import BacklotFormat
import BacklotProtocol
import BacklotRepository
import Dispatch
import Foundation

/// `backlot fetch`: installs packs into a container from a repository's catalog, as an app would.
struct FetchCommand: Command {
    static let spec = CommandSpec(
        name: "fetch",
        summary: "Install or update packs in a container from a signed catalog, downloading only missing chunks.",
        discussion:
            "Without --pack or --event, every pack the catalog offers is fetched. The catalog URL names the app and channel (…/\(PublishedTreeLayout.catalogTemplate)).",
        options: [ContainerOption.container] + deviceOptions + [packs, event, noReport, jsonFlag])

    static let catalog = Option<String>(
        "catalog", "URL", help: "The channel's catalog URL.",
        expected: "an http(s) URL", check: { $0.hasPrefix("https://") || $0.hasPrefix("http://") })
    static let trust = Option<String>("trust", "KEYFILE", help: "The repository's public key to pin (its root.pub).")
    static let ca = Option<String?>(
        "ca", "FILE", help: "A CA certificate to trust (a development server's tls/ca.pem).")
    static let platform = Option<Platform>(
        "platform", "PLATFORM", default: .linux, help: "iOS, macOS, tvOS, visionOS or linux.")
    static let limitRate = Option<Int>(
        "limit-rate", "BYTES", default: 0, showDefault: "no limit", in: 0...Int.max,
        help: "Receive at most this many bytes per second per connection.")
    static let minimumRate = Option<Int>(
        "minimum-rate", "BYTES", default: 4096, in: 1...Int.max,
        help:
            "Fail a transfer slower than this many bytes per second: every request's deadline is its size at this rate plus 30 s."
    )
    static let packs = Option<[String]>("pack", "ID", help: "Only these packs.")
    static let noReport = Flag(
        "no-report",
        help:
            "Send no device report (by default the container's releases, once a day, and its installs' outcomes go to the server, in aggregate and without an identifier: docs/privacy.md)."
    )
    static let event = Option<InstallationEventType?>(
        "event", "EVENT", help: "firstInstallation or subsequentUpdate: the packs that event fetches.")
    static let device = Option<String?>(
        "device", "PROFILE",
        help:
            "What picks a pack's variant: textureFormat=FORMAT[+FORMAT…],deviceTier=low|medium|high|0-9 (a key left out is detected; docs/variants.md)."
    )
    static let peer = Option<[String]>(
        "peer", "URL",
        help:
            "A LAN peer cache to ask for chunks before the origin, http://HOST:PORT (repeatable; every chunk is checked against the signed index; docs/peer-cache.md).",
        expected: "http://HOST:PORT", check: { $0.allSatisfy { PeerDirectory.peerURL($0) != nil } })
    static let discoverPeers = Flag(
        "discover-peers",
        help: "Also ask the peer caches advertised on the local link (_backlot._tcp, through avahi-browse).")
    /// What a device needs to reach a catalog, shared with `verify --repair`.
    static let deviceOptions: [any OptionDeclaration] = [
        catalog, trust, ca, platform, limitRate, minimumRate, device, peer, discoverPeers,
    ]

    static func manager(
        _ arguments: ParsedArguments, container: String, sendsReports: Bool = true
    ) throws -> AssetPackManager {
        let catalog = arguments[Self.catalog]
        guard let url = URL(string: catalog), url.scheme == "https" || url.scheme == "http" else {
            throw BacklotError(.usage, "--catalog must be an http(s) URL", context: catalog)
        }
        let (app, channel) = try AssetPackManager.Configuration.target(ofCatalogURL: url)
        let key = try PublicKeyFile.read(path: arguments[trust])
        var configuration = AssetPackManager.Configuration(
            containerPath: container, catalogURL: url,
            app: app, channel: channel, trustedKeys: [key],
            platform: arguments[platform], caFile: arguments[ca], bandwidthLimit: arguments[limitRate])
        configuration.minimumRate = arguments[minimumRate]
        configuration.sendsReports = sendsReports
        if let text = arguments[device] {
            configuration.deviceProfile = try DeviceProfile.detected(
                overriddenBy: text, label: "--device", code: .usage)
        }
        configuration.peers = PeerDirectory(
            staticPeers: arguments[peer].compactMap(PeerDirectory.peerURL), discovers: arguments[discoverPeers])
        return try AssetPackManager(configuration: configuration)
    }

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        // A device's memory is the device's: idle malloc arenas of the install's threads and freed
        // large blocks are not kept resident (``MemoryArenas``).
        MemoryArenas.keepSmallForDevice()
        let manager = try manager(
            arguments, container: arguments[ContainerOption.container], sendsReports: !arguments[noReport])
        let packs = arguments[Self.packs]
        let event = arguments[Self.event]
        let json = arguments[jsonFlag]
        let reports = try BlockingPool.waitForAsync {
            var ids = packs
            if ids.isEmpty {
                let all = try await manager.allAssetPacks
                ids = all.filter { event == nil || $0.downloadPolicy.installationEventTypes.contains(event!) }.map(\.id)
                    .sorted()
            }
            var out: [AssetPackManager.FetchReport] = []
            for id in ids {
                let progress = ProgressReporter(io: io, label: "fetching \(id)")
                // Subscribed before the fetch starts, so that its updates are all seen; the bar is
                // drawn at least once per download (a fast one shows its end).
                let updates = manager.statusUpdates(forAssetPackWithID: id)
                let watcher = Task {
                    for await update in updates {
                        if case .downloading(_, let p) = update {
                            repeat {
                                progress.update(UInt64(max(0, p.completedUnitCount)), UInt64(max(1, p.totalUnitCount)))
                                if p.isFinished { break }
                                try? await Task.sleep(nanoseconds: 100_000_000)
                            } while !Task.isCancelled
                        }
                    }
                }
                let report: AssetPackManager.FetchReport
                do {
                    report = try await manager.fetch(packWithID: id)
                } catch {
                    watcher.cancel()
                    throw error
                }
                // A pack already up to date sends no update (and its stream never ends). A download
                // is over once fetch returns: the watcher stops now (not after its next redraw, up
                // to 0.1 s later), and the bar ends at the whole download even when the watcher
                // had not drawn it yet.
                watcher.cancel()
                await watcher.value
                let nothingDone =
                    report.downloadedBytes == 0 && report.downloadedChunks == 0 && report.reusedChunks == 0
                    && report.linkedFiles == 0
                progress.complete(total: nothingDone ? nil : report.downloadedBytes)
                out.append(report)
            }
            return out
        }
        if json {
            // What came as deltas: recorded in the container by the install (whichever process ran it).
            let container = try ClientContainer(path: arguments[ContainerOption.container])
            let deltas = try reports.map { r -> ClientContainer.DeltaUse? in
                guard r.downloadedBytes > 0, let use = try container.lastDeltaUse(r.id),
                    use.digest == (try container.installed(r.id))?.digest
                else { return nil }
                return use
            }
            try io.outJSON(FetchOutput(reports, deltas: deltas))
        } else {
            for r in reports {
                for (peer, why) in r.bannedPeers.sorted(by: { $0.key < $1.key }) {
                    io.err("\(r.id): the LAN peer \(peer) was not asked again: \(why)\n")
                }
                io.out(
                    "\(r.id) version \(r.version): \(r.downloadedBytes == 0 ? "up to date" : "\(ByteCount.format(r.downloadedBytes)) downloaded\(r.peerBytes > 0 ? " from the origin and \(ByteCount.format(r.peerBytes)) from LAN peers" : ""), \(r.reusedChunks) chunks reused, \(r.linkedFiles) files unchanged")\n"
                )
            }
        }
    }
}

/// `backlot status --container DIR`: what is installed (offline).
struct StatusCommand: Command {
    static let spec = CommandSpec(
        name: "status",
        summary: "List the packs installed in a container (offline).",
        options: [ContainerOption.container, jsonFlag])
    static var existingContainerOptions: [any OptionDeclaration] { [ContainerOption.container] }

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let container = try ClientContainer(path: arguments[ContainerOption.container])
        let installed = try container.installed()
        if arguments[jsonFlag] {
            try io.outJSON(
                Output(
                    deviceID: container.deviceID,
                    packs: installed.map {
                        .init(
                            pack: $0.id, version: $0.version, digest: $0.digest, downloadBytes: $0.downloadSize,
                            path: container.releaseFolder($0.id, digest: $0.digest))
                    }))
            return
        }
        if installed.isEmpty { io.out("No pack is installed in \(container.path).\n") }
        for p in installed {
            io.out(
                "\(p.id)\tversion \(p.version)\t\(p.digest.prefix(12))…\t\(container.releaseFolder(p.id, digest: p.digest))\n"
            )
        }
    }
}

/// `backlot remove --container DIR --pack ID`.
struct RemoveCommand: Command {
    static let spec = CommandSpec(
        name: "remove",
        summary: "Remove an installed pack from a container.",
        options: [ContainerOption.container, PackOptions.pack, jsonFlag])
    static var existingContainerOptions: [any OptionDeclaration] { [ContainerOption.container] }

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let container = try ClientContainer(path: arguments[ContainerOption.container])
        let id = arguments[PackOptions.pack]
        try container.remove(id)
        if arguments[jsonFlag] {
            try io.outJSON(Output(pack: id, removed: true))
        } else {
            io.out("Removed \(id).\n")
        }
    }
}

extension StatusCommand {
    /// `status --json` (docs/json.md).
    struct Output: Encodable {
        struct Pack: Encodable {
            let pack: String
            let version: Int
            let digest: String
            let downloadBytes: Int
            let path: String
        }
        let deviceID: String
        let packs: [Pack]
    }
}

extension RemoveCommand {
    /// `remove --json` (docs/json.md).
    struct Output: Encodable {
        let pack: String
        let removed: Bool
    }
}
