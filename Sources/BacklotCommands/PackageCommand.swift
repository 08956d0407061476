import BacklotBasics
import BacklotFormat
import BacklotJSON
import Foundation

/// `backlot package MANIFEST -o OUT.pack`: builds a pack.
struct PackageCommand: Command {
    static let spec = CommandSpec(
        name: "package",
        summary: "Build a .pack from a manifest and the files it selects.",
        discussion: """
        The pack is written beside OUT, flushed and renamed into place: on failure nothing is left.
        The same manifest and files always give a byte-identical pack.
        """,
        arguments: [.init("MANIFEST", help: "The manifest (JSON; comments allowed).")],
        options: [
            .init("output", short: "o", value: "OUT.pack", help: "Where to write the pack (required)."),
            .init("source-root", value: "DIR", help: "Where selector paths start (default: the manifest's sourceRoot, else the current directory)."),
            .init("jobs", short: "j", value: "N", help: "Threads for hashing and compressing (default: the number of cores)."),
            .init("level", value: "N", help: "zstd level, 1-19 (default 3)."),
            .init("chunk-size", value: "KIB", help: "Average chunk size in KiB, a power of two from 4 to 1024 (default 64)."),
            .init("force", help: "Replace OUT if it exists."),
            .init("json", help: "Print the summary as JSON."),
        ])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let manifestPath = arguments.positionals[0]
        let output = try required("output", in: arguments)
        let jobs = try arguments.integer("jobs", in: 1...256, default: ProcessInfo.processInfo.activeProcessorCount, command: spec.name)
        let level = try arguments.integer("level", in: 1...19, default: 3, command: spec.name)
        let chunkKiB = try arguments.integer("chunk-size", in: 4...1024, default: Chunker.defaultAverageSize >> 10, command: spec.name)
        guard chunkKiB.nonzeroBitCount == 1 else {
            throw BacklotError(.usage, "--chunk-size must be a power of two (4, 8, 16 … 1024), not \(chunkKiB)", context: "backlot package")
        }
        let (manifest, warnings) = try AssetPackManifest.load(path: manifestPath)
        for w in warnings { warn("\(manifestPath):\(w)", io: io) }
        let root = SourceSelection.resolveSourceRoot(override: arguments.values["source-root"], manifest: manifest, manifestPath: manifestPath)
        let selection = try SourceSelection(manifest: manifest, sourceRoot: root)
        for w in selection.warnings { warn(w, io: io) }

        let writer = PackWriter(options: .init(level: Int32(level), jobs: jobs, averageChunkSize: chunkKiB << 10,
                                               overwrite: arguments.flag("force")))
        let progress = ProgressReporter(io: io, label: "packaging")
        let summary = try writer.write(manifest: manifest, selection: selection, to: output) { progress.update($0, $1) }
        progress.finish()

        if arguments.flag("json") {
            io.out(JSONNode.object([
                "output": .string(output),
                "assetPackID": .string(manifest.assetPackID.rawValue),
                "packDigest": .string(summary.packDigest.hex),
                "files": .number(summary.files),
                "bytesIn": .number(summary.bytesIn),
                "bytesOut": .number(summary.bytesOut),
                "chunks": .number(summary.chunks),
                "chunkReferences": .number(summary.chunkReferences),
                "deduplicatedBytes": .number(summary.deduplicatedBytes),
                "seconds": .number(summary.seconds),
            ]).prettyPrinted() + "\n")
            return
        }
        let ratio = summary.bytesIn == 0 ? 0 : Double(summary.bytesOut) / Double(summary.bytesIn) * 100
        io.out("""
        Packaged \(manifest.assetPackID) into \(output)
          files         \(summary.files)
          bytes in      \(ByteCount.format(summary.bytesIn)) (\(summary.bytesIn))
          bytes out     \(ByteCount.format(summary.bytesOut)) (\(summary.bytesOut), \(String(format: "%.1f", ratio)) %)
          chunks        \(summary.chunks) stored, \(summary.chunkReferences - summary.chunks) duplicates
          deduplicated  \(ByteCount.format(summary.deduplicatedBytes))
          pack digest   \(summary.packDigest)
          time          \(String(format: "%.2f", summary.seconds)) s

        """)
    }
}
