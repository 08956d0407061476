import BacklotBasics
import BacklotFormat
import BacklotJSON

/// `backlot diff OLD.pack NEW.pack`: what a client holding OLD downloads to get NEW.
struct DiffCommand: Command {
    static let spec = CommandSpec(
        name: "diff",
        summary: "Show what a client holding OLD must download to get NEW (chunks, bytes, Range requests).",
        arguments: [.init("OLD", help: "The pack the client holds."), .init("NEW", help: "The pack it wants.")],
        options: [jsonFlag])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let old = try PackReader(path: arguments.positionals[0])
        let new = try PackReader(path: arguments.positionals[1])
        let d = PackDiff(old: old.index, new: new)
        if arguments[jsonFlag] {
            io.out(
                JSONNode.object([
                    "downloadBytes": .number(d.downloadBytes),
                    "downloadChunkCount": .number(d.downloadChunks),
                    "newPackBytes": .number(d.newPackBytes),
                    "reusedChunkCount": .number(d.reusedChunks),
                    "reusedBytes": .number(d.reusedBytes),
                    "metadataBytes": .number(d.metadataBytes),
                    "rangeRequestCount": .number(d.rangeRequests),
                    "changedFileCount": .number(d.filesChanged),
                    "removedFileCount": .number(d.filesRemoved),
                    "unchangedFileCount": .number(d.filesUnchanged),
                ]).prettyPrinted() + "\n")
            return
        }
        let share = d.newPackBytes == 0 ? 0 : Double(d.downloadBytes) / Double(d.newPackBytes) * 100
        io.out(
            """
            \(old.path) -> \(new.path)
              download      \(ByteCount.format(d.downloadBytes)) (\(d.downloadBytes) bytes, \(String(format: "%.1f", share)) % of the new pack)
              chunks        \(d.downloadChunks) to fetch, \(d.reusedChunks) reused (\(ByteCount.format(d.reusedBytes)))
              requests      \(d.rangeRequests) Range requests (header, index, \(d.rangeRequests - 2) chunk runs)
              files         \(d.filesChanged) new or changed, \(d.filesRemoved) removed, \(d.filesUnchanged) unchanged

            """)
    }
}
