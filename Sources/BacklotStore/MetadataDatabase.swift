import BacklotBasics

/// The SQL dialect of a ``MetadataDatabase``: where SQLite and PostgreSQL differ (column types in
/// schema steps, locks), code asks for it; everything else is written once with `?` placeholders.
public enum SQLDialect: String, Sendable, Hashable {
    case sqlite
    case postgresql
}

/// A database holding a repository's metadata: SQLite (``SQLiteMetadataDatabase``, the embedded
/// default) or PostgreSQL (`PostgresDatabase` in the `BacklotPostgres` module). Both give the same
/// behaviour: one transaction per change, unique and foreign-key violations as
/// ``BacklotError/Code/conflict``, 64-bit integers, checked conversions on read.
///
/// ```swift
/// let db: any MetadataDatabase = try SQLiteMetadataDatabase(path: "meta.sqlite")
/// let id = try db.transaction { tx in
///     try tx.query("INSERT INTO apps(id, created) VALUES (?, ?) RETURNING id", [.text("a"), .integer(1)])
/// }
/// ```
public protocol MetadataDatabase: Sendable {
    /// Which SQL this database speaks.
    var dialect: SQLDialect { get }
    /// Names the database for messages (a path, or `postgresql://user@host:port/db`, never a password).
    var displayName: String { get }

    /// Runs `body` in one transaction; any error rolls everything back.
    ///
    /// SQLite: `BEGIN IMMEDIATE` (writers take turns). PostgreSQL: `SERIALIZABLE`; a serialization
    /// failure or deadlock runs `body` again, a bounded number of times, so `body` must only touch
    /// the database (it may run more than once).
    /// - Throws: what `body` throws; ``BacklotError/Code/conflict`` for constraint violations;
    ///   ``BacklotError/Code/unavailable`` when the database cannot be reached.
    @discardableResult
    func transaction<T>(_ body: (inout any MetadataConnection) throws -> T) throws -> T

    /// Runs `body` outside an explicit transaction: each statement is atomic on its own.
    @discardableResult
    func read<T>(_ body: (inout any MetadataConnection) throws -> T) throws -> T

    /// Runs `body` while holding a lock named `name` that other processes using the same database
    /// also respect (PostgreSQL: a session advisory lock; SQLite: the `BEGIN IMMEDIATE` of each
    /// transaction inside is the lock, so `body` just runs). Used to migrate a schema once.
    @discardableResult
    func withExclusiveLock<T>(_ name: String, _ body: () throws -> T) throws -> T
}

extension MetadataDatabase {
    /// Runs one statement on its own, atomic by itself with no transaction around it, and returns
    /// the number of rows changed: for a conditional single-row change (a lease taken if free, a
    /// progress recorded if still held) that needs no serialisable transaction, and so meets no
    /// serialization failure however many run at once.
    ///
    /// ```swift
    /// let claimed = try db.runAlone("UPDATE versions SET lease_owner = ? WHERE id = ? AND lease_owner IS NULL", [.text(me), .integer(7)]) == 1
    /// ```
    @discardableResult
    public func runAlone(_ sql: String, _ bindings: [Database.Value]) throws -> Int {
        try read { try $0.run(sql, bindings) }
    }
}

/// A connection inside ``MetadataDatabase/transaction(_:)`` or ``MetadataDatabase/read(_:)``.
/// Statements use `?` placeholders (PostgreSQL's `$1…` are made from them, outside quoted text).
public protocol MetadataConnection {
    /// Which SQL this connection speaks.
    var dialect: SQLDialect { get }
    /// Runs SQL without results and without bindings (may hold several statements).
    func execute(_ sql: String) throws
    /// Runs one statement with bindings; returns the number of rows changed.
    @discardableResult
    func run(_ sql: String, _ bindings: [Database.Value]) throws -> Int
    /// Runs one statement with bindings and returns its rows (an `INSERT … RETURNING id` gives the new id on both).
    func query(_ sql: String, _ bindings: [Database.Value]) throws -> [Database.Row]
    /// Inside a transaction, waits for a lock named `key` held until the transaction ends
    /// (PostgreSQL: `pg_advisory_xact_lock`); SQLite's `BEGIN IMMEDIATE` holds the whole database already.
    func lockUntilCommit(_ key: String) throws
}

extension MetadataConnection {
    @discardableResult
    public func run(_ sql: String) throws -> Int { try run(sql, []) }
    public func query(_ sql: String) throws -> [Database.Row] { try query(sql, []) }
}
