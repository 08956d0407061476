import BacklotBasics
import BacklotFormat
import BacklotClient
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
        arguments: [.init("PACK", help: "A .pack file (or use --container).", required: false)],
        options: [
            .init("jobs", short: "j", value: "N", help: "Threads (default: the number of cores)."),
            .init("container", value: "DIR", help: "Verify the packs installed in this container instead."),
            .init("repair", help: "With --container: re-fetch what is damaged (needs --catalog and --trust)."),
            .init("catalog", value: "URL", help: "With --repair: the catalog to repair from."),
            .init("trust", value: "KEYFILE", help: "With --repair: the repository's public key."),
            .init("ca", value: "FILE", help: "With --repair: a CA certificate to trust."),
        ])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        if arguments.values["container"] != nil {
            try verifyContainer(arguments, io: io)
            return
        }
        guard !arguments.positionals.isEmpty else {
            throw BacklotError(.usage, "missing argument PACK (or --container DIR)", context: "backlot verify", hint: "see `backlot verify --help`")
        }
        let jobs = try arguments.integer("jobs", in: 1...256, default: ProcessInfo.processInfo.activeProcessorCount, command: spec.name)
        let pack = try PackReader(path: arguments.positionals[0])
        let progress = ProgressReporter(io: io, label: "verifying")
        try pack.verify(jobs: jobs) { progress.update($0, $1) }
        progress.finish()
        io.out("OK \(pack.path): \(pack.index.metadata.assetPackID), \(pack.index.files.count) files, \(pack.index.chunks.count) chunks, digest \(pack.packDigest)\n")
    }
}

extension VerifyCommand {
    static func verifyContainer(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let container = try required("container", in: arguments)
        if arguments.flag("repair") {
            let manager = try FetchCommand.manager(arguments)
            let repaired = try blocking { try await manager.repair() }
            let left = try manager.verifyInstalled()
            for id in repaired { io.out("repaired \(id)\n") }
            guard left.isEmpty else {
                throw BacklotError(.checkFailed, "still damaged after repair: \(left.joined(separator: ", "))", context: container)
            }
            io.out("OK \(container): every installed file is intact\n")
            return
        }
        let damaged = try ClientContainer.verify(path: container)
        for d in damaged { io.out("damaged \(d)\n") }
        guard damaged.isEmpty else {
            throw BacklotError(.checkFailed, "\(damaged.count) installed file\(damaged.count == 1 ? " is" : "s are") damaged or missing", context: container,
                               hint: "run backlot verify --container \(container) --repair --catalog URL --trust KEYFILE")
        }
        io.out("OK \(container): every installed file is intact\n")
    }
}
