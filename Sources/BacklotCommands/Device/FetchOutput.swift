import BacklotClient

/// `backlot fetch --json` (docs/json.md): per pack fetched, what came over the network and what
/// was reused; `deltaBytes` is what came as delta frames, `deltaChunkCount` the chunks rebuilt from
/// them; `downloadedBytes` came from the origin, `peerBytes` (`peerChunkCount` chunks) from LAN
/// peer caches (docs/peer-cache.md). Encoded by ``CommandJSON``, keys sorted.
struct FetchOutput: Encodable {
    struct Pack: Encodable {
        let pack: String
        let version: Int
        let downloadedBytes: UInt64
        let downloadedChunkCount: Int
        let reusedChunkCount: Int
        let linkedFileCount: Int
        let deltaBytes: UInt64
        let deltaChunkCount: Int
        let peerBytes: UInt64
        let peerChunkCount: Int
        /// Peers dropped during the install, by URL, and why.
        let bannedPeers: [String: String]
    }

    let packs: [Pack]

    init(_ reports: [AssetPackManager.FetchReport], deltas: [ClientContainer.DeltaUse?]) {
        packs = zip(reports, deltas).map { r, use in
            Pack(
                pack: r.id, version: r.version, downloadedBytes: r.downloadedBytes,
                downloadedChunkCount: r.downloadedChunks, reusedChunkCount: r.reusedChunks,
                linkedFileCount: r.linkedFiles, deltaBytes: use?.bytes ?? 0, deltaChunkCount: use?.chunks ?? 0,
                peerBytes: r.peerBytes, peerChunkCount: r.peerChunks, bannedPeers: r.bannedPeers)
        }
    }
}
