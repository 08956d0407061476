import BacklotBasics
import BacklotFormat
import BacklotJSON
import Foundation

/// `backlot extract PACK -o DIR`: writes a pack's files into a new directory.
struct ExtractCommand: Command {
    static let output = Option<String>("output", "DIR", short: "o", help: "The directory to create.")
    static let jobs = Option<Int>(
        "jobs", "N", short: "j", default: ProcessInfo.processInfo.activeProcessorCount,
        showDefault: "the number of cores",
        in: 1...256, help: "Threads.")
    static let spec = CommandSpec(
        name: "extract",
        summary: "Write a pack's files into a new directory, checking every chunk.",
        discussion:
            "DIR must not exist or be empty. Files appear only when all are written and checked: on failure nothing is left.",
        arguments: [.init("PACK", help: "A .pack or an Apple Archive (.aar) file.")],
        options: [output, jobs, jsonFlag])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let output = arguments[Self.output]
        let jobs = arguments[Self.jobs]
        if AppleArchiveCommands.isAppleArchive(arguments.positionals[0]) {
            try AppleArchiveCommands.extract(arguments.positionals[0], to: output, json: arguments[jsonFlag], io: io)
            return
        }
        let pack = try PackReader(path: arguments.positionals[0])
        let progress = ProgressReporter(io: io, label: "extracting")
        try PackExtractor(pack: pack, jobs: jobs).extract(to: output) { progress.update($0, $1) }
        progress.finish()
        if arguments[jsonFlag] {
            try io.outJSON(
                Output(
                    pack: pack.index.metadata.assetPackID.rawValue, output: output, fileCount: pack.index.files.count,
                    installBytes: pack.index.installSize, digest: pack.packDigest.hex))
            return
        }
        io.out(
            "Extracted \(pack.index.files.count) files (\(ByteCount.format(pack.index.installSize))) of \(pack.index.metadata.assetPackID) to \(output)\n"
        )
    }
}

extension ExtractCommand {
    /// `extract --json` (docs/json.md).
    struct Output: Encodable {
        let pack: String
        let output: String
        let fileCount: Int
        let installBytes: UInt64
        let digest: String
    }
}
