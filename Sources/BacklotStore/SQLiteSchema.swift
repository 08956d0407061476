import BacklotBasics

/// The ordered steps of one SQLite database's schema, versioned by `PRAGMA user_version`: a new
/// database gets every step, an old one the steps it lacks, each once, each in its own
/// transaction with the version it sets, and a database newer than the steps is refused.
/// Processes that open one database at the same moment take turns (`BEGIN IMMEDIATE`), and each
/// step reads the version again inside its transaction.
///
/// ```swift
/// let schema = SQLiteSchema("the agent's agent.sqlite", [
///     .init(1, "the first tables") { tx in try tx.execute("CREATE TABLE IF NOT EXISTS …") },
/// ])
/// try schema.migrate(db)
/// ```
public struct SQLiteSchema: Sendable {
    /// One step: what it does, and its version (1, 2, …).
    public struct Step: Sendable {
        public let version: Int32
        public let summary: String
        let apply: @Sendable (inout Database.Connection) throws -> Void

        public init(
            _ version: Int32, _ summary: String, _ apply: @escaping @Sendable (inout Database.Connection) throws -> Void
        ) {
            self.version = version
            self.summary = summary
            self.apply = apply
        }
    }

    /// What the database is, for errors ("the container's state.sqlite").
    public let name: String
    public let steps: [Step]

    public init(_ name: String, _ steps: [Step]) {
        precondition(
            steps.map(\.version) == Array(1...Int32(steps.count)), "schema steps are numbered 1, 2, … in order")
        self.name = name
        self.steps = steps
    }

    /// The newest version the steps reach.
    public var latest: Int32 { steps.last?.version ?? 0 }

    /// Brings `db` to ``latest``; a database already there is only read.
    /// - Returns: the version it is at now.
    /// - Throws: ``BacklotError/Code/invalidInput`` when the database is newer than the steps
    ///   (written by a newer Backlot), naming both versions; what a step throws (it is rolled back).
    @discardableResult
    public func migrate(_ db: Database) throws -> Int32 {
        let found = try db.read { try Self.version(&$0) }
        if found == latest { return found }
        try refuseNewer(found, db)
        for step in steps {
            try db.transaction { tx in
                let current = try Self.version(&tx)
                try refuseNewer(current, db)
                guard current < step.version else { return }
                try step.apply(&tx)
                try tx.execute("PRAGMA user_version = \(step.version)")
            }
        }
        return latest
    }

    func refuseNewer(_ version: Int32, _ db: Database) throws {
        guard version > latest else { return }
        throw BacklotError(
            .invalidInput,
            "\(name) is at schema version \(version), newer than version \(latest), the newest this Backlot knows",
            context: db.path, hint: "use a Backlot at least as new as the one that last opened it")
    }

    /// The database's `user_version`.
    public static func version(_ tx: inout Database.Connection) throws -> Int32 {
        Int32(truncatingIfNeeded: try tx.query("PRAGMA user_version").first?["user_version"]?.int ?? 0)
    }
}

extension Database.Connection {
    /// The names of a table's columns (empty for a table that does not exist).
    public func columns(of table: String) throws -> Set<String> {
        Set(try query("PRAGMA table_info(\(table))").compactMap { $0["name"]?.string })
    }

    /// Adds a column that a table made by an older release lacks (`name` with its SQL declaration).
    public func addColumnIfMissing(_ table: String, _ name: String, _ declaration: String) throws {
        if !(try columns(of: table)).contains(name) {
            try execute("ALTER TABLE \(table) ADD COLUMN \(name) \(declaration)")
        }
    }
}

extension SQLiteSchema {
    /// Opens (creating if needed) the database at `path` and brings it to this schema, with a page
    /// cache of 256 KiB: these are a device's databases (a container's), whose rows are few or read
    /// once, and whose process's memory is the device's (installing 4 GiB: 48 → 46 MiB at its peak).
    /// - Throws: what ``Database/init(path:mode:pageCacheKiB:)`` and ``migrate(_:)`` throw.
    public func open(_ path: String) throws -> Database {
        let db = try Database(path: path, pageCacheKiB: 256)
        try migrate(db)
        return db
    }
}
