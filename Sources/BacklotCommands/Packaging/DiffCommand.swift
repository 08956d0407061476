import BacklotBasics
import BacklotClient
import BacklotFormat

/// `backlot diff OLD.pack NEW.pack`: what a client holding OLD downloads to get NEW.
struct DiffCommand: Command {
    static let spec = CommandSpec(
        name: "diff",
        summary:
            "Show what a client holding OLD must download to get NEW (chunks, bytes, Range requests), without and with a delta.",
        arguments: [.init("OLD", help: "The pack the client holds."), .init("NEW", help: "The pack it wants.")],
        options: [device, jsonFlag])
    static let device = Option<String?>(
        "device", "PROFILE",
        help:
            "For packs with variants: what one device of this profile downloads (textureFormat=astc,deviceTier=high; a key left out is detected), not every variant."
    )

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let old = try PackReader(path: arguments.positionals[0])
        let new = try PackReader(path: arguments.positionals[1])
        var d = PackDiff(old: old.index, new: new)
        var variantLine = ""
        if let text = arguments[device] {
            let profile = try DeviceProfile.detected(overriddenBy: text, label: "--device", code: .usage)
            let oldChoice = old.index.metadata.variants?.choice(for: profile) ?? VariantChoice()
            let newChoice = new.index.metadata.variants?.choice(for: profile) ?? VariantChoice()
            d = PackDiff(
                old: try old.index.selecting(oldChoice, source: old.path), new: new,
                installing: try new.index.selecting(newChoice, source: new.path))
            variantLine =
                "  device        \(profile): \(oldChoice) -> \(newChoice) (the delta line counts every variant)\n"
        } else if new.index.metadata.variants != nil {
            variantLine = "  variants      every variant counted (--device PROFILE for one device's download)\n"
        }
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

            """ + variantLine)
    }
}
