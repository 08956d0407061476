/// Requests and bytes the server answered for one file of the published tree on one UTC day,
/// as ``DownloadCounts/add(_:)`` records them (the server counts them in memory and hands
/// them over in batches).
///
/// ```swift
/// try repository.downloads.add([DownloadHit(.catalog(app: "com.example.game"), day: "2026-12-01", requests: 3, bytes: 4_096)])
/// ```
public struct DownloadHit: Sendable, Hashable {
    /// What was downloaded, as the tree's path names it.
    public enum Target: Sendable, Hashable {
        /// `v1/apps/APP/CHANNEL/catalog.json`.
        case catalog(app: String)
        /// `v1/packs/SHA256.pack`: the version is found by the archive's SHA-256, among the
        /// versions of `app` first (the app the client named: an archive two apps share is
        /// credited to the one whose device downloaded it).
        case pack(archiveSHA256: String, app: String? = nil)
        /// `v1/apple/APP/CHANNEL/PLATFORM/manifest.json`.
        case appleManifest(app: String)
        /// `v1/apple/APP/CHANNEL/PLATFORM/packs/ID`: the version is the one live on the channel.
        case applePack(app: String, channel: String, pack: String)
        /// `v1/deltas/SHA256.delta`: the version is the one the delta leads to.
        case delta(sha256: String)
    }

    public let target: Target
    /// `YYYY-MM-DD`, UTC.
    public let day: String
    public let requests: Int64
    public let bytes: Int64

    public init(_ target: Target, day: String, requests: Int64, bytes: Int64) {
        self.target = target
        self.day = day
        self.requests = requests
        self.bytes = bytes
    }
}
