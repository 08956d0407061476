/// One installed release of a pack, as `state.sqlite`'s `installed` table keeps it.
public struct InstalledRelease: Sendable, Hashable {
    public let id: String
    public let version: Int64
    public let digest: String
    public let downloadSize: Int64
    /// The pack's metadata from the catalog (JSON).
    public let metadata: String
    /// The release's stored index (header and index bytes).
    public let indexBytes: [UInt8]
    /// When it was installed (seconds since 1970).
    public let installedAt: Int64

    public init(
        id: String, version: Int64, digest: String, downloadSize: Int64, metadata: String, indexBytes: [UInt8],
        installedAt: Int64
    ) {
        self.id = id
        self.version = version
        self.digest = digest
        self.downloadSize = downloadSize
        self.metadata = metadata
        self.indexBytes = indexBytes
        self.installedAt = installedAt
    }
}
