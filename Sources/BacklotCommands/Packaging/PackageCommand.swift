import BacklotAppleArchive
import BacklotBasics
import BacklotFormat
import BacklotJSON
import Foundation

/// `backlot package MANIFEST -o OUT.pack`: builds a pack.
struct PackageCommand: Command {
    static let output = Option<String>("output", "OUT.pack", short: "o", help: "Where to write the pack.")
    static let sourceRoot = EvaluateCommand.sourceRoot
    static let jobs = Option<Int>(
        "jobs", "N", short: "j", default: ProcessInfo.processInfo.activeProcessorCount,
        showDefault: "the number of cores",
        in: 1...256, help: "Threads for hashing and compressing.")
    static let level = Option<Int>("level", "N", default: 3, in: 1...19, help: "zstd level, 1-19.")
    static let chunkSize = Option<Int>(
        "chunk-size", "KIB", default: Chunker.defaultAverageSize >> 10, in: 4...1024,
        help: "Average chunk size in KiB, a power of two from 4 to 1024.")
    static let force = Flag("force", help: "Replace OUT if it exists.")
    static let noDictionary = Flag(
        "no-dictionary",
        help:
            "Train no zstd dictionary: always a format-1 pack, which Backlot before format 2 reads (larger with many small files)."
    )
    static let format = Option<String>(
        "format", "FORMATS", default: "pack",
        help:
            "pack, aar (an Apple Archive, as ba-package writes for iOS), or pack,aar: both from one selection, into the folder -o names (ID.pack, ID.aar)."
    )
    static let compression = Option<String>(
        "compression", "ALGORITHM", default: "zlib",
        help: "For aar: zlib (Apple's readers take it; no LZFSE encoder here), lzma, lz4 or none.")
    static let downloadManifest = Option<String?>(
        "download-manifest", "FILE",
        help:
            "With aar: also write Apple's self-hosted download manifest for it (version 0), as download-manifest create would; needs --download-base-url."
    )
    static let downloadBaseURL = Option<String?>(
        "download-base-url", "URL",
        help: "With --download-manifest: where the .aar will be served, an http(s) URL (URL + \"/\" + the pack ID).")
    static let spec = CommandSpec(
        name: "package",
        summary: "Build a .pack from a manifest and the files it selects.",
        discussion: """
            The pack is written beside OUT, flushed and renamed into place: on failure nothing is left.
            The same manifest and files always give a byte-identical pack.
            With 1,000 files of 16 KiB or less, a zstd dictionary is trained on them and stored in the pack
            (format version 2, docs/format.md §5) when it makes the pack smaller.
            """,
        arguments: [.init("MANIFEST", help: "The manifest (JSON; comments allowed).")],
        options: [
            output, sourceRoot, format, compression, downloadManifest, downloadBaseURL, jobs, level, chunkSize, force,
            noDictionary, jsonFlag,
        ])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let manifestPath = arguments.positionals[0]
        let output = arguments[Self.output]
        let jobs = arguments[Self.jobs]
        let level = arguments[Self.level]
        let chunkKiB = arguments[chunkSize]
        guard chunkKiB.nonzeroBitCount == 1 else {
            throw BacklotError(
                .usage, "--chunk-size must be a power of two (4, 8, 16 … 1024), not \(chunkKiB)",
                context: "backlot package")
        }
        let (manifest, warnings) = try PackManifest.load(path: manifestPath)
        for w in warnings { warn("\(manifestPath):\(w)", io: io) }
        let root = SourceSelection.resolveSourceRoot(
            override: arguments[sourceRoot], manifest: manifest, manifestPath: manifestPath)
        // Listing a large tree takes a while: say how many files were found as it goes.
        let selecting = FoundCounter(io: io, label: "selecting")
        let selection = try SourceSelection(manifest: manifest, sourceRoot: root) { selecting.update($0) }
        selecting.finish()
        for w in selection.warnings { warn(w, io: io) }

        let formats = arguments[format].split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
        guard !formats.isEmpty, formats.allSatisfy({ $0 == "pack" || $0 == "aar" }), Set(formats).count == formats.count
        else {
            throw BacklotError(
                .usage, "--format must be pack, aar or pack,aar, not \(arguments[format])", context: "backlot package")
        }
        guard let archiveCompression = AppleArchiveWriter.Compression(rawValue: arguments[compression]) else {
            throw BacklotError(
                .usage, "--compression must be zlib, lzma, lz4 or none, not \(arguments[compression])",
                context: "backlot package")
        }
        var packOutput = output
        if formats.contains("aar") {
            var archiveOutput = output
            if formats.count == 2 {
                try FileSystem.makeDirectories(output)
                archiveOutput = output + "/" + manifest.assetPackID.rawValue + ".aar"
                packOutput = output + "/" + manifest.assetPackID.rawValue + ".pack"
            }
            let written = try AppleArchiveWriter(compression: archiveCompression).write(
                selection, to: archiveOutput, overwrite: arguments[force])
            if let file = arguments[downloadManifest] {
                try writeDownloadManifest(file, manifest: manifest, archiveBytes: written.archiveSize, arguments)
            }
            if formats.count == 1 {
                if arguments[jsonFlag] {
                    try io.outJSON(
                        ArchiveOutput(
                            output: archiveOutput, pack: manifest.assetPackID.rawValue, format: "aar",
                            compression: archiveCompression.rawValue, fileCount: written.files,
                            installBytes: written.installSize, archiveBytes: written.archiveSize))
                } else {
                    io.out(
                        "Packaged \(manifest.assetPackID) into \(archiveOutput) (Apple Archive, \(archiveCompression.rawValue)): \(written.files) files, \(ByteCount.format(written.installSize)) in, \(ByteCount.format(written.archiveSize)) out\n"
                    )
                }
                return
            }
            if !arguments[jsonFlag] {
                io.out(
                    "Packaged \(manifest.assetPackID) into \(archiveOutput) (Apple Archive, \(archiveCompression.rawValue))\n"
                )
            }
        }

        let writer = PackWriter(
            options: .init(
                level: Int32(level), jobs: jobs, averageChunkSize: chunkKiB << 10,
                overwrite: arguments[force], dictionary: !arguments[noDictionary]))
        let progress = ProgressReporter(io: io, label: "packaging")
        let summary = try writer.write(manifest: manifest, selection: selection, to: packOutput) {
            progress.update($0, $1)
        }
        progress.finish()

        if arguments[jsonFlag] {
            try io.outJSON(
                Output(
                    output: packOutput, pack: manifest.assetPackID.rawValue, digest: summary.packDigest.hex,
                    fileCount: summary.files, installBytes: summary.bytesIn, packBytes: summary.bytesOut,
                    chunkCount: summary.chunks, chunkReferenceCount: summary.chunkReferences,
                    deduplicatedBytes: summary.deduplicatedBytes, seconds: summary.seconds))
            return
        }
        let ratio = summary.bytesIn == 0 ? 0 : Double(summary.bytesOut) / Double(summary.bytesIn) * 100
        io.out(
            """
            Packaged \(manifest.assetPackID) into \(packOutput)
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

extension PackageCommand {
    /// Apple's self-hosted download manifest for the `.aar` just written, for the first Apple
    /// platform the manifest lists (`download-manifest create` makes one per platform).
    static func writeDownloadManifest(
        _ path: String, manifest: PackManifest, archiveBytes: UInt64, _ arguments: ParsedArguments
    ) throws {
        guard let base = arguments[downloadBaseURL], base.hasPrefix("https://") || base.hasPrefix("http://") else {
            throw BacklotError(
                .usage, "--download-manifest needs --download-base-url, an http(s) URL where the .aar will be served",
                context: "backlot package")
        }
        guard manifest.platforms.contains(where: { $0 != .linux }) else {
            throw BacklotError(
                .usage, "--download-manifest: the manifest lists no Apple platform", context: "backlot package",
                hint: "Apple's download manifest is for iOS, macOS, tvOS or visionOS")
        }
        let entry = AppleDownloadManifest.Entry(
            id: manifest.assetPackID.rawValue, baseURL: base, version: 0, downloadSize: archiveBytes,
            downloadPolicy: manifest.downloadPolicy, userInfo: manifest.userInfo)
        let file = try AtomicFile(path: path, overwrite: arguments[force])
        try file.descriptor.write(Array(AppleDownloadManifest(assetPacks: [entry]).encoded.utf8))
        try file.commit()
    }

    /// `package --json` (docs/json.md).
    struct Output: Encodable {
        let output: String
        let pack: String
        let digest: String
        let fileCount: Int
        let installBytes: UInt64
        let packBytes: UInt64
        let chunkCount: Int
        let chunkReferenceCount: Int
        let deduplicatedBytes: UInt64
        let seconds: Double
    }

    /// `package --format aar --json`.
    struct ArchiveOutput: Encodable {
        let output: String
        let pack: String
        let format: String
        let compression: String
        let fileCount: Int
        let installBytes: UInt64
        let archiveBytes: UInt64
    }
}
