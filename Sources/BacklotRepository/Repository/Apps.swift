import BacklotBasics
import BacklotFormat
import BacklotStore
import Foundation

/// The apps and their packs (tables `apps` and `packs`): made, listed, and an app's four-eyes
/// rule. A pack is made by its first upload (``createPack(app:id:)``), up to
/// ``maximumPacksPerApp`` per app.
///
/// ```swift
/// try repository.apps.create("com.example.game", fourEyes: true)
/// try repository.apps.createPack(app: "com.example.game", id: "Levels")
/// print(try repository.apps.packList(app: "com.example.game").map(\.id))
/// ```
public final class Apps: Sendable {
    let db: any MetadataDatabase
    /// Per-app quota (reported in ``AppInfo``; ``Uploads`` enforces it).
    let quotaBytes: UInt64
    /// Packs per app.
    let maximumPacksPerApp: Int

    init(db: any MetadataDatabase, quotaBytes: UInt64, maximumPacksPerApp: Int) {
        self.db = db
        self.quotaBytes = quotaBytes
        self.maximumPacksPerApp = maximumPacksPerApp
    }

    /// Creates an app.
    /// - Parameter fourEyes: whether its release requests must be approved by another token than the one that asked.
    /// - Throws: `conflict` if it exists; `invalidPackID` for a bad ID.
    @discardableResult
    public func create(_ id: String, fourEyes: Bool = false) throws -> AppInfo {
        _ = try PackID(id)
        do {
            try db.transaction { tx in
                try tx.run(
                    "INSERT INTO apps(id, created, four_eyes) VALUES (?, ?, ?)",
                    [.text(id), .integer(Repository.now()), .integer(fourEyes ? 1 : 0)])
                try AuditLog.record(&tx, .appCreate, app: id, details: [.fourEyes: String(fourEyes)])
            }
        } catch let e as BacklotError where e.code == .conflict {
            throw BacklotError(.conflict, "the app exists already", context: id)
        }
        return try app(id)
    }

    /// The IDs of every app, sorted.
    public func ids() throws -> [String] { try list().map(\.id) }

    /// Every app, sorted by ID.
    public func list() throws -> [AppInfo] {
        try db.read { try $0.query("SELECT * FROM apps ORDER BY id", []) }.compactMap(appInfo)
    }

    /// One app. - Throws: `notFound`.
    public func app(_ id: String) throws -> AppInfo {
        guard
            let info = try db.read({ try $0.query("SELECT * FROM apps WHERE id = ?", [.text(id)]) }).first.flatMap(
                appInfo)
        else {
            throw Apps.noSuchApp(id, among: try ids())
        }
        return info
    }

    /// Turns an app's four-eyes rule on or off. - Throws: `notFound`.
    @discardableResult
    public func setFourEyes(app id: String, _ on: Bool) throws -> AppInfo {
        try db.transaction { tx in
            try Apps.requireApp(&tx, id)
            try tx.run("UPDATE apps SET four_eyes = ? WHERE id = ?", [.integer(on ? 1 : 0), .text(id)])
            try AuditLog.record(&tx, .appUpdate, app: id, details: [.fourEyes: String(on)])
        }
        return try app(id)
    }

    /// Sets an app's second-reviewer rule: a production rollout step above `percent` must be made by
    /// another person than the one who approved the release being rolled out (nil or 0: no rule).
    /// - Throws: `notFound`; `invalidInput` for a share outside 0…100.
    public func setSecondReviewer(app id: String, above percent: Double?) throws -> AppInfo {
        if let percent, !(percent.isFinite && (0...100).contains(percent)) {
            throw BacklotError(.invalidInput, "the share must be 0…100", context: "secondReviewerAbove")
        }
        let bp = percent.flatMap { $0 > 0 ? Int(($0 * 100).rounded()) : nil }
        try db.transaction { tx in
            try Apps.requireApp(&tx, id)
            try tx.run(
                "UPDATE apps SET second_reviewer_above_bp = ? WHERE id = ?",
                [bp.map { .integer(Int64($0)) } ?? .null, .text(id)])
            try AuditLog.record(
                &tx, .appUpdate, app: id,
                details: [.secondReviewerAbove: bp.map { Releases.percentText(Double($0) / 100) } ?? "off"])
        }
        return try app(id)
    }

    /// The share (basis points) above which a rollout step needs a second reviewer; nil: no rule.
    static func secondReviewerThreshold(_ tx: inout any MetadataConnection, _ app: String) throws -> Int? {
        try tx.query("SELECT second_reviewer_above_bp FROM apps WHERE id = ?", [.text(app)]).first?[
            "second_reviewer_above_bp"]?.integer(as: Int.self)
    }

    func appInfo(_ row: Database.Row) -> AppInfo? {
        guard let id = row["id"]?.string else { return nil }
        return AppInfo(
            id: id, created: Date(timeIntervalSince1970: Double(row["created"]?.int ?? 0)),
            fourEyes: (row["four_eyes"]?.int ?? 0) != 0, quotaBytes: quotaBytes,
            secondReviewerAbove: row["second_reviewer_above_bp"]?.int.map { Double($0) / 100 })
    }

    static func requireApp(_ tx: inout any MetadataConnection, _ app: String) throws {
        guard try !tx.query("SELECT 1 FROM apps WHERE id = ?", [.text(app)]).isEmpty else {
            let ids = try tx.query("SELECT id FROM apps ORDER BY id", []).compactMap { $0["id"]?.string }
            throw noSuchApp(app, among: ids)
        }
    }

    /// `notFound` for an app that does not exist: with the closest existing app ("did you mean
    /// com.example.game?") when the ID looks like a misspelling of one, else how to make it.
    static func noSuchApp(_ app: String, among ids: [String]) -> BacklotError {
        guard let guess = Suggestion.closest(to: app, in: ids.filter { $0 != app }) else {
            return BacklotError(
                .notFound, "no such app", context: app, hint: "create it first: backlot apps create \(app)")
        }
        return BacklotError(
            .notFound, "no such app", context: app,
            hint: "did you mean \(guess)? Check the app ID (--app); a new app is made with: backlot apps create \(app)")
    }

    static func requirePack(_ tx: inout any MetadataConnection, _ app: String, _ pack: String) throws {
        try requireApp(&tx, app)
        guard try !tx.query("SELECT 1 FROM packs WHERE app = ? AND id = ?", [.text(app), .text(pack)]).isEmpty else {
            let ids = try tx.query("SELECT id FROM packs WHERE app = ? ORDER BY id", [.text(app)]).compactMap {
                $0["id"]?.string
            }
            let made = "a pack is made by its first upload: backlot upload PACK --app \(app)"
            throw BacklotError(
                .notFound, "no such pack", context: "\(app)/\(pack)",
                hint: Suggestion.closest(to: pack, in: ids).map {
                    "did you mean \($0)? Check the pack ID (--pack); \(made)"
                }
                    ?? made)
        }
    }

    /// Creates a pack (ID rule as in manifests). - Throws: `conflict`, `quotaExceeded` past the pack limit.
    public func createPack(app: String, id: String) throws {
        _ = try PackID(id)
        try db.transaction { tx in
            try Apps.requireApp(&tx, app)
            let count =
                try tx.query("SELECT COUNT(*) AS n FROM packs WHERE app = ?", [.text(app)]).first?["n"]?.int ?? 0
            guard count < maximumPacksPerApp else {
                throw BacklotError(
                    .quotaExceeded, "the app has \(count) packs, the most allowed", context: app,
                    hint: "remove a pack, or raise the limit")
            }
            do {
                try tx.run(
                    "INSERT INTO packs(app, id, created) VALUES (?, ?, ?)",
                    [.text(app), .text(id), .integer(Repository.now())])
            } catch let e as BacklotError where e.code == .conflict {
                throw BacklotError(.conflict, "the pack exists already", context: "\(app)/\(id)")
            }
            try AuditLog.record(&tx, .packCreate, app: app, pack: id)
        }
    }

    /// The IDs of an app's packs, sorted. - Throws: `notFound` for an unknown app.
    public func packs(app: String) throws -> [String] { try packList(app: app).map(\.id) }

    /// An app's packs, sorted by ID, with their version counts and newest versions. - Throws: `notFound` for an unknown app.
    public func packList(app: String) throws -> [PackInfo] {
        try db.transaction { tx in
            try Apps.requireApp(&tx, app)
            let counts = try Uploads.versionCounts(&tx, app: app)
            return try tx.query("SELECT id, created FROM packs WHERE app = ? ORDER BY id", [.text(app)]).compactMap {
                row in
                guard let id = row["id"]?.string else { return nil }
                return PackInfo(
                    id: id, created: Date(timeIntervalSince1970: Double(row["created"]?.int ?? 0)),
                    versions: counts[id]?.count ?? 0, latest: counts[id]?.latest)
            }
        }
    }

    /// Whether the app's four-eyes rule is on (its release requests need another token to approve them).
    static func hasFourEyes(_ tx: inout any MetadataConnection, _ app: String) throws -> Bool {
        (try tx.query("SELECT four_eyes FROM apps WHERE id = ?", [.text(app)]).first?["four_eyes"]?.int ?? 0) != 0
    }

    /// Writes the app's row, so that the quota checks of one app take turns (``Uploads`` checks
    /// its quota after this, in the same transaction).
    static func takeQuotaTurn(_ tx: inout any MetadataConnection, _ app: String) throws {
        try tx.run("UPDATE apps SET four_eyes = four_eyes WHERE id = ?", [.text(app)])
    }
}
