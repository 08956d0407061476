import BacklotBasics
import BacklotProtocol
import BacklotStore
import Foundation

/// Download counts (table `downloads`): the requests and bytes the server counted, per app,
/// pack, version, kind and UTC day.
///
/// ```swift
/// let report = try repository.downloads.report(app: "com.example.game", days: 7)
/// for row in report.rows { print(row.date, row.kind, row.requests) }
/// ```
public final class DownloadCounts: Sendable {
    let db: any MetadataDatabase

    init(db: any MetadataDatabase) {
        self.db = db
    }

    /// The most days ``report(app:days:now:)`` reports.
    public static let longestReport = API.Limits.longestDownloadReport

    /// Adds counted downloads to the per app, pack, version, kind and day totals, in one
    /// transaction. A pack archive is attributed to the newest retained version of that SHA-256
    /// (of the app the client named, when it has one), an Apple pack to the version live on its channel; a file no version is known for (deleted
    /// since) is not counted.
    public func add(_ hits: [DownloadHit]) throws {
        guard !hits.isEmpty else { return }
        try db.transaction { tx in
            var versions: [DownloadHit.Target: (app: String, pack: String, version: Int)?] = [:]
            for hit in hits {
                let row: (app: String, pack: String, version: Int, kind: String)?
                switch hit.target {
                case .catalog(let app): row = (app, "", 0, "catalog")
                case .appleManifest(let app): row = (app, "", 0, "appleManifest")
                case .pack(let sha, let app):
                    if versions[hit.target] == nil {
                        versions[hit.target] = try Uploads.newestVersion(&tx, archive: sha, preferring: app).flatMap(
                            Self.versionKey)
                    }
                    row = (versions[hit.target] ?? nil).map { ($0.app, $0.pack, $0.version, "pack") }
                case .applePack(let app, let channel, let pack):
                    if versions[hit.target] == nil {
                        versions[hit.target] = try Releases.liveVersion(&tx, app: app, channel: channel, pack: pack)
                            .flatMap(Self.versionKey)
                    }
                    row = (versions[hit.target] ?? nil).map { ($0.app, $0.pack, $0.version, "applePack") }
                case .delta(let sha):
                    if versions[hit.target] == nil {
                        versions[hit.target] = try Publication.deltaTarget(&tx, sha256: sha).flatMap(Self.versionKey)
                    }
                    row = (versions[hit.target] ?? nil).map { ($0.app, $0.pack, $0.version, "delta") }
                }
                guard let row else { continue }
                try tx.run(
                    """
                    INSERT INTO downloads(app, day, kind, pack, version, requests, bytes) VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT(app, day, kind, pack, version)
                    DO UPDATE SET requests = downloads.requests + excluded.requests, bytes = downloads.bytes + excluded.bytes
                    """,
                    [
                        .text(row.app), .text(hit.day), .text(row.kind), .text(row.pack), .integer(Int64(row.version)),
                        .integer(hit.requests), .integer(hit.bytes),
                    ])
            }
        }
    }

    static func versionKey(_ r: Database.Row) -> (app: String, pack: String, version: Int)? {
        guard let app = r["app"]?.string, let pack = r["pack"]?.string, let n = r["number"]?.integer(as: Int.self)
        else { return nil }
        return (app, pack, n)
    }

    /// An app's download counts over the last `days` UTC days (today included), oldest first.
    ///
    /// ```swift
    /// let report = try repository.downloads.report(app: "com.example.game", days: 30)
    /// print(report.from, report.to, report.rows.count)
    /// ```
    /// - Returns: the first and last day (`YYYY-MM-DD`) and the rows of those days.
    /// - Throws: `notFound` for an unknown app; `invalidInput` for days outside 1…``longestReport``.
    public func report(
        app: String, days: Int = 30, now: Date = Date()
    ) throws -> (
        from: String, to: String, rows: [DownloadCount]
    ) {
        let (from, to) = try Self.days(days, endingAt: now, of: "a download report")
        let rows = try db.transaction { tx in
            try Apps.requireApp(&tx, app)
            return try tx.query(
                "SELECT * FROM downloads WHERE app = ? AND day >= ? AND day <= ? ORDER BY day, kind, pack, version",
                [.text(app), .text(from), .text(to)])
        }
        return (
            from, to,
            rows.compactMap { r in
                guard let day = r["day"]?.string, let kind = r["kind"]?.string else { return nil }
                let pack = r["pack"]?.string ?? ""
                let version = r["version"]?.integer(as: Int.self) ?? 0
                return DownloadCount(
                    date: day, pack: pack.isEmpty ? nil : pack, version: version == 0 ? nil : version, kind: kind,
                    requests: r["requests"]?.int ?? 0, bytes: r["bytes"]?.int ?? 0)
            }
        )
    }

    /// The first and last UTC day (`YYYY-MM-DD`) of a report of the last `days` days, today included.
    /// - Throws: `invalidInput` naming `what` for days outside 1…``longestReport``.
    static func days(_ days: Int, endingAt now: Date, of what: String) throws -> (from: String, to: String) {
        guard (1...Self.longestReport).contains(days) else {
            throw BacklotError(
                .invalidInput, "\(what) covers 1…\(Self.longestReport) days, not \(days)", context: "days")
        }
        return (Self.utcDay(now.addingTimeInterval(-Double(days - 1) * 86_400)), Self.utcDay(now))
    }

    /// `YYYY-MM-DD` of a time, in UTC.
    public static func utcDay(_ date: Date) -> String {
        CivilDate.utcDayText(secondsSince1970: date.timeIntervalSince1970)
    }

    /// `YYYY-MM-DD` of a day number (days since 1970-01-01), in UTC.
    public static func utcDay(daysSinceEpoch: Int64) -> String { CivilDate.dayText(fromDays: daysSinceEpoch) }
}
