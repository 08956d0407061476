import BacklotFormat

/// `backlot diff --json` (docs/json.md): what a client holding OLD downloads to get NEW, by Range
/// requests and through a delta file (the `delta…` keys, docs/format.md §14). Encoded by
/// ``CommandJSON``, keys sorted.
struct DiffOutput: Encodable {
    let downloadBytes: UInt64
    let downloadChunkCount: Int
    let newPackBytes: UInt64
    let reusedChunkCount: Int
    let reusedBytes: UInt64
    let metadataBytes: UInt64
    let rangeRequestCount: Int
    let changedFileCount: Int
    let removedFileCount: Int
    let unchangedFileCount: Int
    let deltaDownloadBytes: UInt64
    let deltaBytes: UInt64
    let deltaChunkCount: Int
    let deltaWholeChunkCount: Int
    let deltaRangeRequestCount: Int

    init(_ d: PackDiff, _ c: DeltaCost) {
        downloadBytes = d.downloadBytes
        downloadChunkCount = d.downloadChunks
        newPackBytes = d.newPackBytes
        reusedChunkCount = d.reusedChunks
        reusedBytes = d.reusedBytes
        metadataBytes = d.metadataBytes
        rangeRequestCount = d.rangeRequests
        changedFileCount = d.filesChanged
        removedFileCount = d.filesRemoved
        unchangedFileCount = d.filesUnchanged
        deltaDownloadBytes = c.downloadBytes
        deltaBytes = c.deltaBytes
        deltaChunkCount = c.deltaChunks
        deltaWholeChunkCount = c.wholeChunks
        deltaRangeRequestCount = c.rangeRequests
    }
}
