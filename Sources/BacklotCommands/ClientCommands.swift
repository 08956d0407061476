import BacklotBasics
import BacklotCatalog
import BacklotClient
import BacklotFormat
import BacklotJSON
import BacklotRepository
import Dispatch
import Foundation

/// `backlot fetch`: installs packs into a container from a repository's catalog, as an app would.
struct FetchCommand: Command {
    static let spec = CommandSpec(
        name: "fetch",
        summary: "Install or update packs in a container from a signed catalog, downloading only missing chunks.",
        discussion: "Without --pack or --event, every pack the catalog offers is fetched. The catalog URL names the app and channel (…/v1/apps/APP/CHANNEL/catalog.json).",
        options: [
            .init("catalog", value: "URL", help: "The channel's catalog URL (required)."),
            .init("trust", value: "KEYFILE", help: "The repository's public key to pin (its root.pub) (required)."),
            .init("container", value: "DIR", help: "The container folder (required)."),
            .init("ca", value: "FILE", help: "A CA certificate to trust (a development server's tls/ca.pem)."),
            .init("pack", value: "ID,ID…", help: "Only these packs."),
            .init("event", value: "EVENT", help: "firstInstallation or subsequentUpdate: the packs that event fetches."),
            .init("platform", value: "PLATFORM", help: "iOS, macOS, tvOS, visionOS or linux (default linux)."),
            .init("limit-rate", value: "BYTES", help: "Receive at most this many bytes per second per connection."),
            .init("minimum-rate", value: "BYTES", help: "Fail a transfer slower than this many bytes per second (default 4096): every request's deadline is its size at this rate plus 30 s."),
            .init("json", help: "Print JSON: per pack the version and the bytes downloaded."),
        ])

    static func manager(_ arguments: ParsedArguments) throws -> AssetPackManager {
        let catalog = try required("catalog", in: arguments)
        guard let url = URL(string: catalog), url.scheme == "https" || url.scheme == "http" else {
            throw BacklotError(.usage, "--catalog must be an http(s) URL", context: catalog)
        }
        let (app, channel) = try AssetPackManager.Configuration.target(ofCatalogURL: url)
        let platformText = arguments.values["platform"] ?? "linux"
        guard let platform = Platform(rawValue: platformText) else {
            throw BacklotError(.usage, "--platform takes iOS, macOS, tvOS, visionOS or linux", context: platformText)
        }
        let key = try PublicKeyFile.read(path: try required("trust", in: arguments))
        let limit = try arguments.integer("limit-rate", in: 0...Int.max, default: 0, command: "fetch")
        var configuration = AssetPackManager.Configuration(containerPath: try required("container", in: arguments), catalogURL: url,
                                                           app: app, channel: channel, trustedKeys: [key],
                                                           platform: platform, caFile: arguments.values["ca"], bandwidthLimit: limit)
        configuration.minimumRate = try arguments.integer("minimum-rate", in: 1...Int.max, default: 4096, command: "fetch")
        return try AssetPackManager(configuration: configuration)
    }

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let manager = try manager(arguments)
        let packs = (arguments.values["pack"] ?? "").split(separator: ",").map(String.init)
        let eventText = arguments.values["event"]
        let event = try eventText.map { text -> InstallationEventType in
            guard let e = InstallationEventType(rawValue: text) else {
                throw BacklotError(.usage, "--event takes firstInstallation or subsequentUpdate", context: text)
            }
            return e
        }
        let json = arguments.flag("json")
        let reports = try blocking {
            var ids = packs
            if ids.isEmpty {
                let all = try await manager.allAssetPacks
                ids = all.filter { event == nil || $0.downloadPolicy.installationEventTypes.contains(event!) }.map(\.id).sorted()
            }
            var out: [AssetPackManager.FetchReport] = []
            for id in ids {
                let progress = ProgressReporter(io: io, label: "fetching \(id)")
                let watcher = Task {
                    for await update in manager.statusUpdates(forAssetPackWithID: id) {
                        if case .downloading(_, let p) = update {
                            while !p.isFinished && !Task.isCancelled {
                                progress.update(UInt64(max(0, p.completedUnitCount)), UInt64(max(1, p.totalUnitCount)))
                                try? await Task.sleep(nanoseconds: 100_000_000)
                            }
                        }
                    }
                }
                let report = try await manager.fetch(packWithID: id)
                watcher.cancel()
                progress.finish()
                out.append(report)
            }
            return out
        }
        if json {
            io.out(JSONNode.object(["packs": .array(reports.map {
                .object(["id": .string($0.id), "version": .number($0.version), "downloadedBytes": .number($0.downloadedBytes),
                         "downloadedChunks": .number($0.downloadedChunks), "reusedChunks": .number($0.reusedChunks), "linkedFiles": .number($0.linkedFiles)])
            })]).prettyPrinted() + "\n")
        } else {
            for r in reports {
                io.out("\(r.id) version \(r.version): \(r.downloadedBytes == 0 ? "up to date" : "\(ByteCount.format(r.downloadedBytes)) downloaded, \(r.reusedChunks) chunks reused, \(r.linkedFiles) files unchanged")\n")
            }
        }
    }
}

/// Runs async work from the synchronous CLI.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let semaphore = DispatchSemaphore(value: 0)
    let box = ResultBox<T>()
    Task.detached {
        do { box.result = .success(try await body()) } catch { box.result = .failure(error) }
        semaphore.signal()
    }
    semaphore.wait()
    return try box.result!.get()
}

final class ResultBox<T>: @unchecked Sendable { var result: Result<T, any Error>? }

/// `backlot status --container DIR`: what is installed (offline).
struct StatusCommand: Command {
    static let spec = CommandSpec(
        name: "status",
        summary: "List the packs installed in a container (offline).",
        options: [.init("container", value: "DIR", help: "The container folder (required)."), .init("json", help: "Print JSON.")])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let container = try ClientContainer(path: try required("container", in: arguments))
        let installed = try container.installed()
        if arguments.flag("json") {
            io.out(JSONNode.object(["deviceID": .string(container.deviceID), "packs": .array(installed.map {
                .object(["id": .string($0.id), "version": .number($0.version), "digest": .string($0.digest), "downloadSize": .number($0.downloadSize),
                         "path": .string(container.releaseFolder($0.id, digest: $0.digest))])
            })]).prettyPrinted() + "\n")
            return
        }
        if installed.isEmpty { io.out("No pack is installed in \(container.path).\n") }
        for p in installed { io.out("\(p.id)\tversion \(p.version)\t\(p.digest.prefix(12))…\t\(container.releaseFolder(p.id, digest: p.digest))\n") }
    }
}

/// `backlot remove --container DIR --pack ID`.
struct RemoveCommand: Command {
    static let spec = CommandSpec(
        name: "remove",
        summary: "Remove an installed pack from a container.",
        options: [.init("container", value: "DIR", help: "The container folder (required)."), .init("pack", value: "ID", help: "The pack (required).")])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let container = try ClientContainer(path: try required("container", in: arguments))
        let id = try required("pack", in: arguments)
        try container.remove(id)
        io.out("Removed \(id).\n")
    }
}
