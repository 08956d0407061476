import BacklotBasics
import BacklotFormat
import Foundation

/// `backlot extract PACK -o DIR`: writes a pack's files into a new directory.
struct ExtractCommand: Command {
    static let spec = CommandSpec(
        name: "extract",
        summary: "Write a pack's files into a new directory, checking every chunk.",
        discussion: "DIR must not exist or be empty. Files appear only when all are written and checked: on failure nothing is left.",
        arguments: [.init("PACK", help: "A .pack file.")],
        options: [
            .init("output", short: "o", value: "DIR", help: "The directory to create (required)."),
            .init("jobs", short: "j", value: "N", help: "Threads (default: the number of cores)."),
        ])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let output = try required("output", in: arguments)
        let jobs = try arguments.integer("jobs", in: 1...256, default: ProcessInfo.processInfo.activeProcessorCount, command: spec.name)
        let pack = try PackReader(path: arguments.positionals[0])
        let progress = ProgressReporter(io: io, label: "extracting")
        try PackExtractor(pack: pack, jobs: jobs).extract(to: output) { progress.update($0, $1) }
        progress.finish()
        io.out("Extracted \(pack.index.files.count) files (\(ByteCount.format(pack.index.installSize))) of \(pack.index.metadata.assetPackID) to \(output)\n")
    }
}
