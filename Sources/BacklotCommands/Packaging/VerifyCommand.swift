import BacklotBasics
import BacklotClient
import BacklotFormat
import BacklotJSON
import Foundation

/// `backlot verify PACK`: checks every byte of a pack.
struct VerifyCommand: Command {
    static let spec = CommandSpec(
        name: "verify",
        summary: "Check a pack (header, index, every chunk and file), or with --container every installed file.",
        discussion: """
            Exits 0 when everything is intact; otherwise prints the file, chunk and offset that is wrong and exits 1.
            With --container DIR --repair (and the fetch options), damaged packs are rebuilt, fetching only what is needed.
            """,
        arguments: [
            .init("PACK", help: "A .pack or an Apple Archive (.aar) file (or use --container).", required: false)
        ],
        options: [ExtractCommand.jobs, container, repair, catalog, trust, FetchCommand.ca, jsonFlag])

    static let container = Option<String?>(
        "container", "DIR", help: "Verify the packs installed in this container instead.")
    static let repair = Flag(
        "repair", help: "With --container: re-fetch what is damaged (needs --catalog and --trust).")
    static let catalog = Option<String?>("catalog", "URL", help: "With --repair: the catalog to repair from.")
    static let trust = Option<String?>("trust", "KEYFILE", help: "With --repair: the repository's public key.")
    static var existingContainerOptions: [any OptionDeclaration] { [container] }

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        if let container = arguments[container] {
            try verifyContainer(arguments, container: container, io: io)
            return
        }
        guard !arguments.positionals.isEmpty else {
            throw BacklotError(
                .usage, "missing argument PACK (or --container DIR)", context: "backlot verify",
                hint: "see `backlot verify --help`")
        }
        if AppleArchiveCommands.isAppleArchive(arguments.positionals[0]) {
            try AppleArchiveCommands.verify(arguments.positionals[0], json: arguments[jsonFlag], io: io)
            return
        }
        let jobs = arguments[ExtractCommand.jobs]
        let pack = try PackReader(path: arguments.positionals[0])
        let progress = ProgressReporter(io: io, label: "verifying")
        try pack.verify(jobs: jobs) { progress.update($0, $1) }
        progress.finish()
        if arguments[jsonFlag] {
            try io.outJSON(
                PackOutput(
                    ok: true, path: pack.path, pack: pack.index.metadata.assetPackID.rawValue,
                    fileCount: pack.index.files.count, chunkCount: pack.index.chunks.count, digest: pack.packDigest.hex)
            )
            return
        }
        io.out(
            "OK \(pack.path): \(pack.index.metadata.assetPackID), \(pack.index.files.count) files, \(pack.index.chunks.count) chunks, digest \(pack.packDigest)\n"
        )
    }
}

extension VerifyCommand {
    static func verifyContainer(_ arguments: ParsedArguments, container: String, io: any CommandIO) throws {
        let json = arguments[jsonFlag]
        if arguments[repair] {
            guard let catalog = arguments[catalog], let trust = arguments[trust] else {
                throw usage(
                    "--repair needs --catalog URL and --trust KEYFILE",
                    hint: "give the catalog and key the container was fetched with")
            }
            var device = arguments
            try device.add(catalog, for: FetchCommand.catalog.info, from: nil, command: spec.name)
            try device.add(trust, for: FetchCommand.trust.info, from: nil, command: spec.name)
            let manager = try FetchCommand.manager(device, container: container)
            let repaired = try BlockingPool.waitForAsync { try await manager.repair() }
            let left = try manager.verifyInstalled()
            if json {
                try io.outJSON(
                    ContainerOutput(ok: left.isEmpty, container: container, damaged: left, repaired: repaired))
            } else {
                for id in repaired { io.out("repaired \(id)\n") }
            }
            guard left.isEmpty else {
                throw BacklotError(
                    .checkFailed, "still damaged after repair: \(left.joined(separator: ", "))", context: container)
            }
            if !json { io.out("OK \(container): every installed file is intact\n") }
            return
        }
        let damaged = try ClientContainer.verify(path: container)
        if json {
            try io.outJSON(ContainerOutput(ok: damaged.isEmpty, container: container, damaged: damaged, repaired: nil))
        } else {
            for d in damaged { io.out("damaged \(TerminalText.quoted(d))\n") }
        }
        guard damaged.isEmpty else {
            throw BacklotError(
                .checkFailed,
                "\(damaged.count) installed file\(damaged.count == 1 ? " is" : "s are") damaged or missing",
                context: container,
                hint: "run backlot verify --container \(container) --repair --catalog URL --trust KEYFILE")
        }
        if !json { io.out("OK \(container): every installed file is intact\n") }
    }
}

extension VerifyCommand {
    /// `verify PACK --json` (docs/json.md).
    struct PackOutput: Encodable {
        let ok: Bool
        let path: String
        let pack: String
        let fileCount: Int
        let chunkCount: Int
        let digest: String
    }

    /// `verify --container DIR --json`; `repaired` only with `--repair`.
    struct ContainerOutput: Encodable {
        let ok: Bool
        let container: String
        let damaged: [String]
        let repaired: [String]?
    }
}
