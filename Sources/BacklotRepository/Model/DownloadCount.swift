/// One row of ``DownloadCounts/report(app:days:now:)``: requests and bytes of an app's catalog
/// (pack and version nil), a pack version's archive, or Apple's manifest or pack, on one UTC day.
///
/// ```swift
/// let rows = try repository.downloads.report(app: "com.example.game", days: 7).rows
/// let packBytes = rows.filter { $0.kind == "pack" }.reduce(0) { $0 + $1.bytes }
/// ```
public struct DownloadCount: Sendable, Hashable {
    /// `YYYY-MM-DD`, UTC.
    public let date: String
    public let pack: String?
    public let version: Int?
    /// `catalog`, `pack`, `appleManifest` or `applePack`.
    public let kind: String
    public let requests: Int64
    public let bytes: Int64
}
