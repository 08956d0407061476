import BacklotBasics
import BacklotFormat

/// `backlot diff OLD.pack NEW.pack`: what a client holding OLD downloads to get NEW.
struct DiffCommand: Command {
    static let spec = CommandSpec(
        name: "diff",
        summary:
            "Show what a client holding OLD must download to get NEW (chunks, bytes, Range requests), without and with a delta.",
        arguments: [.init("OLD", help: "The pack the client holds."), .init("NEW", help: "The pack it wants.")],
        options: [jsonFlag])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let old = try PackReader(path: arguments.positionals[0])
        let new = try PackReader(path: arguments.positionals[1])
        let d = PackDiff(old: old.index, new: new)
        // With a delta from OLD, as the server makes it when it processes NEW (docs/format.md §14).
        let delta = try DeltaBuilder().build(base: old, target: new)
        let c = DeltaCost(old: old.index, new: new, delta: delta)
        if arguments[jsonFlag] {
            try io.outJSON(DiffOutput(d, c))
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
              with a delta  \(ByteCount.format(c.downloadBytes)) (\(c.downloadBytes) bytes: \(c.deltaChunks) chunks rebuilt from a \(ByteCount.format(c.deltaFileBytes)) delta, \(c.wholeChunks) fetched whole)

            """)
    }
}
