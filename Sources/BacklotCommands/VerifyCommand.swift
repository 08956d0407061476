import BacklotBasics
import BacklotFormat
import Foundation

/// `backlot verify PACK`: checks every byte of a pack.
struct VerifyCommand: Command {
    static let spec = CommandSpec(
        name: "verify",
        summary: "Check a pack: header, index, every chunk and every file's SHA-256.",
        discussion: "Exits 0 when the pack is intact; otherwise prints the file, chunk and offset that is wrong and exits 1.",
        arguments: [.init("PACK", help: "A .pack file.")],
        options: [.init("jobs", short: "j", value: "N", help: "Threads (default: the number of cores).")])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let jobs = try arguments.integer("jobs", in: 1...256, default: ProcessInfo.processInfo.activeProcessorCount, command: spec.name)
        let pack = try PackReader(path: arguments.positionals[0])
        let progress = ProgressReporter(io: io, label: "verifying")
        try pack.verify(jobs: jobs) { progress.update($0, $1) }
        progress.finish()
        io.out("OK \(pack.path): \(pack.index.metadata.assetPackID), \(pack.index.files.count) files, \(pack.index.chunks.count) chunks, digest \(pack.packDigest)\n")
    }
}
