import BacklotBasics
import BacklotStore
import Foundation

/// The one record of the app's launches, in `CONTAINER/tasks.sqlite`, shared by every part of
/// Backlot: the app records a launch when it starts (`AppPresence.markRunning`, as the documented
/// app template does, or `DownloadManager.markAppLaunched()`), the agent's periodic-check policy
/// reads the recent ones, and `DownloadManager` reads the first one: the restrictions before the
/// first launch (Apple's `BAInitialDownloadRestrictions`) are lifted by it, in every process.
///
/// Recent launches are kept 60 days (`app_launches`); the first one is kept for good
/// (`app_first_launch`), so that the restrictions never come back.
///
/// ```swift
/// try AppLaunchRecord.record(containerPath: container)          // the app starts
/// AppLaunchRecord.firstLaunch(containerPath: container)         // the date, or nil before the first launch
/// ```
public enum AppLaunchRecord {

    /// Records a launch at `date` in `db` (a container's `tasks.sqlite`, opened through ``ContainerSchema/tasks``), keeping 60 days of
    /// launches and the first one for good.
    public static func record(in db: Database, at date: Date) throws {
        try db.transaction { tx in
            _ = try tx.run("INSERT INTO app_launches(at) VALUES (?)", [.real(date.timeIntervalSince1970)])
            _ = try tx.run("DELETE FROM app_launches WHERE at < ?", [.real(date.timeIntervalSince1970 - 60 * 86_400)])
            _ = try tx.run(
                "INSERT INTO app_first_launch(one, at) VALUES (1, ?) ON CONFLICT(one) DO NOTHING",
                [.real(date.timeIntervalSince1970)])
        }
    }

    /// Records a launch of the app of the container at `containerPath`.
    /// - Throws: ``BacklotError/Code/io`` when the container's `tasks.sqlite` can't be written.
    public static func record(containerPath: String, at date: Date = Date()) throws {
        try record(in: ContainerSchema.tasks.open(ContainerLayout(root: containerPath).tasksDatabase), at: date)
    }

    /// The launches recorded in `db` since `date` (at most the last 60 days are kept), oldest first.
    public static func launches(in db: Database, since date: Date) throws -> [Date] {
        try db.read {
            try $0.query("SELECT at FROM app_launches WHERE at >= ? ORDER BY at", [.real(date.timeIntervalSince1970)])
        }.compactMap { r in
            if case .real(let t)? = r["at"] { Date(timeIntervalSince1970: t) } else { nil }
        }
    }

    /// When the app was first launched, from `db`; nil when it never was. Only reads (no write
    /// lock is taken), so the processes that ask before every download don't contend.
    public static func firstLaunch(in db: Database) throws -> Date? {
        try db.read { tx in
            // A container from before the first launch was kept for good: its oldest recent launch counts.
            var dates: [Double] = []
            for sql in ["SELECT at FROM app_first_launch", "SELECT MIN(at) AS at FROM app_launches"] {
                // no such table: no launch
                if let rows = try? tx.query(sql), case .real(let t)? = rows.first?["at"] { dates.append(t) }
            }
            return dates.min().map { Date(timeIntervalSince1970: $0) }
        }
    }

    /// When the app of the container at `containerPath` was first launched; nil when it never was
    /// (or the container has no `tasks.sqlite` yet, which is then not created).
    public static func firstLaunch(containerPath: String) -> Date? {
        let path = ContainerLayout(root: containerPath).tasksDatabase
        guard FileSystem.exists(path), let db = try? Database(path: path) else { return nil }
        return try? firstLaunch(in: db)
    }
}
