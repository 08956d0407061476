import BacklotCrypto

/// What a client that holds one version of a pack must download to get another (`backlot diff`).
///
/// A client fetches the header and the index, then only the chunks whose IDs it does not have,
/// one Range request per run of adjacent missing chunks.
///
/// ```swift
/// let diff = PackDiff(old: try PackReader(path: "v1.pack").index,
///                     new: try PackReader(path: "v2.pack"))
/// print(diff.downloadBytes, "of", diff.newPackBytes)
/// ```
public struct PackDiff: Sendable, Hashable {
    /// Bytes to download: header + index + missing chunks.
    public let downloadBytes: UInt64
    /// Chunks to download.
    public let downloadChunks: Int
    /// Size of the new pack (what a full download costs).
    public let newPackBytes: UInt64
    /// Chunks of the new pack already held.
    public let reusedChunks: Int
    /// Compressed bytes of the new pack not downloaded because they are held.
    public let reusedBytes: UInt64
    /// Size of the header and index (always downloaded).
    public let metadataBytes: UInt64
    /// Range requests needed: one for the header, one for the index, one per run of missing chunks.
    public let rangeRequests: Int
    /// Files that are new or changed, removed, and unchanged (by path and SHA-256).
    public let filesChanged: Int, filesRemoved: Int, filesUnchanged: Int

    /// Compares the chunks a client holds (from `old`) with what `new` needs: every chunk, or, for
    /// a device that installs one variant (docs/format.md §3.2), those of `installing`'s files
    /// (``PackIndex/selecting(_:source:)``; pass the old pack's selection as `old` too).
    public init(old: PackIndex, new: PackReader, installing: PackIndex? = nil) {
        let held = Set(old.chunks.map(\.id))
        let needed = installing.map { $0.referencedChunks }
        var missing = 0
        var missingBytes: UInt64 = 0
        var reused = 0
        var reusedBytes: UInt64 = 0
        var runs = 0
        var previousMissing = false
        for (number, chunk) in new.index.chunks.enumerated() {
            if let needed, !needed.contains(number) {
                previousMissing = false
                continue
            }
            if held.contains(chunk.id) {
                reused += 1
                reusedBytes += UInt64(chunk.compressedSize)
                previousMissing = false
            } else {
                missing += 1
                missingBytes += UInt64(chunk.compressedSize)
                if !previousMissing { runs += 1 }
                previousMissing = true
            }
        }
        metadataBytes = UInt64(PackHeader.size) + new.header.indexLength
        downloadBytes = metadataBytes + missingBytes
        downloadChunks = missing
        newPackBytes = new.fileSize
        reusedChunks = reused
        self.reusedBytes = reusedBytes
        rangeRequests = 2 + runs
        let newFiles = (installing ?? new.index).files
        let oldFiles = Dictionary(old.files.map { ($0.path, $0.digest) }, uniquingKeysWith: { a, _ in a })
        let newPaths = Set(newFiles.map(\.path))
        filesUnchanged = newFiles.filter { oldFiles[$0.path] == $0.digest }.count
        filesChanged = newFiles.count - filesUnchanged
        filesRemoved = oldFiles.keys.filter { !newPaths.contains($0) }.count
    }
}
