import BacklotCrypto

/// What an update costs when the client uses a delta (``DeltaBuilder``), as ``PackDiff`` says
/// without one (`backlot diff --json`'s delta fields).
///
/// The client reads the delta's prefix (header, index delta, table) in one Range request; when the
/// index delta is there it reads neither the archive's header nor its index; it fetches the frames
/// of the chunks the delta rebuilds in runs, and the other missing chunks whole from the archive.
///
/// ```swift
/// let result = try DeltaBuilder().build(base: old, target: new)
/// let cost = DeltaCost(old: old.index, new: new, delta: result)
/// print(cost.downloadBytes, "with the delta,", PackDiff(old: old.index, new: new).downloadBytes, "without")
/// ```
public struct DeltaCost: Sendable, Hashable {
    /// Bytes downloaded with the delta: its prefix and frames, the header and index when the delta
    /// has no index delta, and the chunks it does not rebuild.
    public let downloadBytes: UInt64
    /// Of those, the bytes read from the delta file.
    public let deltaBytes: UInt64
    /// Chunks rebuilt from the delta, and chunks still fetched whole.
    public let deltaChunks: Int
    public let wholeChunks: Int
    /// The delta file's size.
    public let deltaFileBytes: UInt64
    /// Range requests: the prefix, one per run of frames, header and index if needed, one per run of whole chunks.
    public let rangeRequests: Int

    public init(old: PackIndex, new: PackReader, delta: DeltaBuilder.Result) {
        let held = Set(old.chunks.map(\.id))
        let rebuilt = Set(delta.entries.flatMap { $0.targets.map(\.id) })
        var whole = 0
        var wholeBytes: UInt64 = 0
        var runs = 0
        var previous = false
        for chunk in new.index.chunks {
            if held.contains(chunk.id) || rebuilt.contains(chunk.id) {
                previous = false
                continue
            }
            whole += 1
            wholeBytes += UInt64(chunk.compressedSize)
            if !previous { runs += 1 }
            previous = true
        }
        let frames = UInt64(delta.bytes.count) - delta.delta.prefixLength
        deltaBytes = UInt64(delta.bytes.count)
        deltaFileBytes = UInt64(delta.bytes.count)
        deltaChunks = delta.rebuiltChunks
        wholeChunks = whole
        let metadata = delta.delta.indexDelta.isEmpty ? UInt64(PackHeader.size) + new.header.indexLength : 0
        downloadBytes = delta.delta.prefixLength + frames + metadata + wholeBytes
        // Frames are contiguous: one run per 2 MiB (the client's largest Range).
        let frameRuns = frames == 0 ? 0 : Int((frames + (2 << 20) - 1) / (2 << 20))
        rangeRequests = 1 + frameRuns + (metadata > 0 ? 2 : 0) + runs
    }
}
