import BacklotFormat
import BacklotProtocol

/// A version of a pack, as the API reports it.
public struct VersionInfo: Sendable, Hashable {
    public let app: String
    public let pack: String
    public let number: Int
    public let state: VersionState
    public let reason: String?
    public let declaredSize: UInt64
    public let received: UInt64
    public let archiveSHA256: String?
    public let installSize: UInt64?
    public let format: ArchiveFormat
    /// The release notes given with the upload (several lines of text), if any.
    public let notes: String?
    /// The texture formats and device tiers its files come in (docs/format.md §3.2), known once
    /// processed; nil for a pack without variants.
    public var variants: PackVariants? = nil
}
