import BacklotBasics
import Foundation

/// A numbered step of a database schema, with its SQL for each dialect, applied once.
///
/// ``SchemaMigration/apply(_:to:)`` keeps a `schema_version` table (one row per step applied),
/// runs each missing step in its own transaction together with its row, and refuses a database
/// whose schema is newer than the steps it knows. Concurrent openers of one database migrate it
/// once: they take turns under ``MetadataDatabase/withExclusiveLock(_:_:)`` and each step checks
/// the version again inside its transaction.
///
/// ```swift
/// let steps = [SchemaMigration(1, "the first tables", sqlite: "CREATE TABLE …", postgresql: "CREATE TABLE …")]
/// let version = try SchemaMigration.apply(steps, to: db)
/// ```
public struct SchemaMigration: Sendable {
    public let number: Int64
    public let summary: String
    public let sqlite: String
    public let postgresql: String

    public init(_ number: Int64, _ summary: String, sqlite: String, postgresql: String) {
        self.number = number
        self.summary = summary
        self.sqlite = sqlite
        self.postgresql = postgresql
    }

    public func sql(for dialect: SQLDialect) -> String { dialect == .sqlite ? sqlite : postgresql }

    static let versionTable = """
        CREATE TABLE IF NOT EXISTS schema_version (version BIGINT PRIMARY KEY, summary TEXT NOT NULL, applied BIGINT NOT NULL)
        """

    /// The highest step recorded in `schema_version` (0 for a database that has none).
    public static func currentVersion(_ tx: inout any MetadataConnection) throws -> Int64 {
        try tx.query("SELECT MAX(version) AS v FROM schema_version", []).first?["v"]?.int ?? 0
    }

    /// Applies the missing steps, in order, each once.
    /// - Returns: the schema version the database is at now (the last step's number).
    /// - Throws: ``BacklotError/Code/invalidInput`` when the database's schema is newer than the
    ///   last step (naming both versions); what a step throws (it is rolled back, and so are the
    ///   steps after it, which are not run).
    @discardableResult
    public static func apply(
        _ steps: [SchemaMigration], to db: any MetadataDatabase, lockName: String = "backlot schema"
    ) throws -> Int64 {
        let known = steps.map(\.number).max() ?? 0
        precondition(
            steps.map(\.number) == steps.map(\.number).sorted() && Set(steps.map(\.number)).count == steps.count,
            "schema steps are numbered in order, each once")
        return try db.withExclusiveLock(lockName) {
            try db.transaction { tx in try tx.execute(versionTable) }
            for step in steps {
                try db.transaction { tx in
                    let current = try currentVersion(&tx)
                    if current > known {
                        throw BacklotError(
                            .invalidInput,
                            "the database's schema is version \(current), newer than version \(known), the newest this backlot knows",
                            context: db.displayName,
                            hint:
                                "run a backlot at least as new as the one that upgraded this database, or use another database"
                        )
                    }
                    guard current < step.number else { return }
                    try tx.execute(step.sql(for: tx.dialect))
                    try tx.run(
                        "INSERT INTO schema_version(version, summary, applied) VALUES (?, ?, ?)",
                        [.integer(step.number), .text(step.summary), .integer(Int64(Date().timeIntervalSince1970))])
                }
            }
            return try db.read { tx in
                let current = try currentVersion(&tx)
                guard current <= known else {
                    throw BacklotError(
                        .invalidInput,
                        "the database's schema is version \(current), newer than version \(known), the newest this backlot knows",
                        context: db.displayName,
                        hint: "run a backlot at least as new as the one that upgraded this database")
                }
                return current
            }
        }
    }
}
