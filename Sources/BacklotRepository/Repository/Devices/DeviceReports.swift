import BacklotBasics
import BacklotFormat
import BacklotProtocol
import BacklotStore
import Foundation

/// What devices report (table `device_reports`), added up per app, channel, UTC day, pack and
/// version: devices holding each release, installs started, finished and failed. The row of pack
/// `''` and version 0 counts the devices that reported that day. Nothing stored names a device or
/// an address (docs/privacy.md).
///
/// ```swift
/// try repository.deviceReports.add(
///     DeviceReport(channel: .production, held: [.init(pack: "Levels", version: 3)]), app: "com.example.game")
/// let figures = try repository.deviceReports.report(app: "com.example.game", days: 7)
/// ```
public final class DeviceReports: Sendable {
    let db: any MetadataDatabase

    init(db: any MetadataDatabase) {
        self.db = db
    }

    /// Adds one device's report to today's figures, in one transaction: +1 device for the day and
    /// for each release in `held` (when `earlierToday` is absent: the day's first report), or, when
    /// `earlierToday` names what the device reported before, a move from those releases to `held`.
    /// Installs are added as they are. A pack or version the app does not have is not counted.
    /// - Returns: how many entries were counted.
    /// - Throws: `notFound` for an unknown app; `invalidInput` for a list or a count over its
    ///   limit (``API/Limits/reportEntries``, ``API/Limits/installsPerReport``), naming it.
    @discardableResult
    public func add(_ report: DeviceReport, app: String, now: Date = Date()) throws -> Int {
        try Self.check(report)
        let day = DownloadCounts.utcDay(now)
        let channel = report.channel.rawValue
        return try db.transaction { tx in
            try Apps.requireApp(&tx, app)
            var known: [DeviceReport.Release: Bool] = [:]
            func exists(_ r: DeviceReport.Release, _ tx: inout any MetadataConnection) throws -> Bool {
                if let k = known[r] { return k }
                let row = try Uploads.storedVersion(&tx, app: app, pack: r.pack, number: Int64(r.version))
                let k = row != nil && row?["deleted"]?.int == 0
                known[r] = k
                return k
            }
            func bump(
                _ pack: String, _ version: Int, _ column: String, by n: Int, _ tx: inout any MetadataConnection
            )
                throws
            {
                let key: [Database.Value] = [
                    .text(app), .text(channel), .text(day), .text(pack), .integer(Int64(version)),
                ]
                if n > 0 {
                    try tx.run(
                        """
                        INSERT INTO device_reports(app, channel, day, pack, version, \(column)) VALUES (?, ?, ?, ?, ?, ?)
                        ON CONFLICT(app, channel, day, pack, version)
                        DO UPDATE SET \(column) = device_reports.\(column) + excluded.\(column)
                        """, key + [.integer(Int64(n))])
                } else if n < 0 {
                    // A move never takes a figure below 0 (a report may name what another day counted).
                    try tx.run(
                        """
                        UPDATE device_reports SET \(column) = CASE WHEN \(column) > ? THEN \(column) - ? ELSE 0 END
                        WHERE app = ? AND channel = ? AND day = ? AND pack = ? AND version = ?
                        """, [.integer(Int64(-n)), .integer(Int64(-n))] + key)
                }
            }
            var counted = 0
            if let held = report.held {
                if let earlier = report.earlierToday {
                    for r in Set(earlier) where try exists(r, &tx) {
                        try bump(r.pack, r.version, "devices", by: -1, &tx)
                    }
                } else {
                    try bump("", 0, "devices", by: 1, &tx)
                }
                for r in Set(held) where try exists(r, &tx) {
                    try bump(r.pack, r.version, "devices", by: 1, &tx)
                    counted += 1
                }
            }
            for i in report.installs ?? [] where try exists(i.release, &tx) {
                try bump(i.release.pack, i.release.version, "started", by: i.started, &tx)
                try bump(i.release.pack, i.release.version, "finished", by: i.finished, &tx)
                try bump(i.release.pack, i.release.version, "failed", by: i.failed, &tx)
                counted += 1
            }
            return counted
        }
    }

    static func check(_ report: DeviceReport) throws {
        for (name, list) in [
            ("held", report.held?.count), ("earlierToday", report.earlierToday?.count),
            ("installs", report.installs?.count),
        ] {
            guard let list, list > API.Limits.reportEntries else { continue }
            throw BacklotError(
                .invalidInput, "\"\(name)\" lists \(list) releases; a report lists at most \(API.Limits.reportEntries)",
                context: "request body", hint: "send the rest in another report")
        }
        let releases = (report.held ?? []) + (report.earlierToday ?? [])
        for r in releases + (report.installs ?? []).map(\.release) {
            if let problem = PackID.problem(with: r.pack) {
                throw BacklotError(.invalidInput, problem.message, context: "pack")
            }
            guard r.version >= 1 else {
                throw BacklotError(
                    .invalidInput, "a version is a whole number from 1, not \(r.version)", context: "version")
            }
        }
        for i in report.installs ?? [] {
            for (name, n) in [("started", i.started), ("finished", i.finished), ("failed", i.failed)]
            where !(0...API.Limits.installsPerReport).contains(n) {
                throw BacklotError(
                    .invalidInput,
                    "\"\(name)\" of \(i.release.pack) version \(i.release.version) is \(n); a report counts 0…\(API.Limits.installsPerReport) installs of a release",
                    context: "installs")
            }
        }
    }

    /// An app's figures over the last `days` UTC days (today included), oldest first; figures
    /// below ``API/Limits/adoptionThreshold`` are nil.
    /// - Throws: `notFound` for an unknown app; `invalidInput` for days outside 1…90.
    public func report(app: String, days: Int = 30, now: Date = Date()) throws -> AdoptionReport {
        let (from, to) = try DownloadCounts.days(days, endingAt: now, of: "an adoption report")
        let rows = try db.transaction { tx in
            try Apps.requireApp(&tx, app)
            return try tx.query(
                "SELECT * FROM device_reports WHERE app = ? AND day >= ? AND day <= ? ORDER BY day, channel, pack, version",
                [.text(app), .text(from), .text(to)])
        }
        return AdoptionReport(
            app: app, from: from, to: to, threshold: API.Limits.adoptionThreshold,
            rows: rows.compactMap { r in
                guard let day = r["day"]?.string, let channel = r["channel"]?.string.flatMap(Channel.init(rawValue:))
                else { return nil }
                let pack = r["pack"]?.string ?? ""
                let version = r["version"]?.integer(as: Int.self) ?? 0
                return AdoptionReport.Row(
                    date: day, channel: channel, pack: pack.isEmpty ? nil : pack, version: version == 0 ? nil : version,
                    devices: Self.shown(r["devices"]?.int), started: Self.shown(r["started"]?.int),
                    finished: Self.shown(r["finished"]?.int), failed: Self.shown(r["failed"]?.int))
            })
    }

    /// What `/metrics` shows of the figures: per app, channel, pack and version, the devices that
    /// held it on the last whole UTC day (only when at least ``API/Limits/adoptionThreshold``), and
    /// the installs started, finished and failed over the figures kept (each shown once it reaches
    /// the threshold, so that no small group is singled out). Each row's `date` is the day its
    /// `devices` is of; its installs are over every day kept.
    public func metrics(now: Date = Date()) throws -> [(app: String, row: AdoptionReport.Row)] {
        let yesterday = DownloadCounts.utcDay(now.addingTimeInterval(-86_400))
        let rows = try db.transaction { tx in
            try tx.query(
                """
                SELECT app, channel, pack, version,
                    CAST(SUM(CASE WHEN day = ? THEN devices ELSE 0 END) AS BIGINT) AS devices,
                    CAST(SUM(started) AS BIGINT) AS started, CAST(SUM(finished) AS BIGINT) AS finished,
                    CAST(SUM(failed) AS BIGINT) AS failed
                FROM device_reports WHERE pack <> '' GROUP BY app, channel, pack, version ORDER BY app, channel, pack, version
                """, [.text(yesterday)])
        }
        return rows.compactMap { r in
            guard let app = r["app"]?.string, let channel = r["channel"]?.string.flatMap(Channel.init(rawValue:)),
                let pack = r["pack"]?.string, let version = r["version"]?.integer(as: Int.self)
            else { return nil }
            return (
                app,
                AdoptionReport.Row(
                    date: yesterday, channel: channel, pack: pack, version: version,
                    devices: Self.shown(r["devices"]?.int),
                    started: Self.shown(r["started"]?.int), finished: Self.shown(r["finished"]?.int),
                    failed: Self.shown(r["failed"]?.int))
            )
        }
    }

    /// A figure as it is shown: nil below ``API/Limits/adoptionThreshold``, so that no small group
    /// is singled out (docs/privacy.md).
    static func shown(_ figure: Int64?) -> Int64? {
        figure.flatMap { $0 >= Int64(API.Limits.adoptionThreshold) ? $0 : nil }
    }

    /// How long the figures are kept: 400 days (a year and its month), then deleted.
    public static let keptDays = 400

    /// Deletes the figures of days older than ``keptDays`` (what the servers' shared work does).
    /// - Returns: the rows deleted.
    @discardableResult
    public func removeExpired(now: Date = Date()) throws -> Int {
        let oldest = DownloadCounts.utcDay(now.addingTimeInterval(-Double(Self.keptDays) * 86_400))
        return try db.transaction { tx in try tx.run("DELETE FROM device_reports WHERE day < ?", [.text(oldest)]) }
    }

    /// Installs of one release on a channel reported since `day` (`YYYY-MM-DD`), unrounded: what a
    /// phased rollout compares.
    static func installs(
        _ tx: inout any MetadataConnection, app: String, channel: String, pack: String, version: Int, since day: String
    ) throws -> (started: Int64, finished: Int64, failed: Int64) {
        let r = try tx.query(
            """
            SELECT CAST(COALESCE(SUM(started), 0) AS BIGINT) AS started, CAST(COALESCE(SUM(finished), 0) AS BIGINT) AS finished,
                CAST(COALESCE(SUM(failed), 0) AS BIGINT) AS failed
            FROM device_reports WHERE app = ? AND channel = ? AND pack = ? AND version = ? AND day >= ?
            """, [.text(app), .text(channel), .text(pack), .integer(Int64(version)), .text(day)]
        ).first
        return (r?["started"]?.int ?? 0, r?["finished"]?.int ?? 0, r?["failed"]?.int ?? 0)
    }
}
