import BacklotBasics

#if canImport(Glibc)
import Glibc
#endif

/// SQLite (``Database``) as a ``MetadataDatabase``: the embedded default for a repository's
/// metadata (one file, WAL, `BEGIN IMMEDIATE` transactions).
///
/// ```swift
/// let db = try SQLiteMetadataDatabase(path: "data/meta.sqlite", mode: 0o600)
/// let rows = try db.read { try $0.query("SELECT id FROM apps", []) }
/// ```
public struct SQLiteMetadataDatabase: MetadataDatabase {
    /// The SQLite database underneath.
    public let database: Database

    /// Opens (creating if needed) the file; see ``Database/init(path:mode:pageCacheKiB:)``.
    /// - Throws: ``BacklotError/Code/io`` when it cannot be opened.
    public init(path: String, mode: mode_t? = nil) throws {
        database = try Database(path: path, mode: mode)
    }

    public init(_ database: Database) { self.database = database }

    public var dialect: SQLDialect { .sqlite }
    public var displayName: String { database.path }

    @discardableResult
    public func transaction<T>(_ body: (inout any MetadataConnection) throws -> T) throws -> T {
        try database.transaction { c in
            var connection: any MetadataConnection = c
            return try body(&connection)
        }
    }

    @discardableResult
    public func read<T>(_ body: (inout any MetadataConnection) throws -> T) throws -> T {
        try database.read { c in
            var connection: any MetadataConnection = c
            return try body(&connection)
        }
    }

    @discardableResult
    public func withExclusiveLock<T>(_ name: String, _ body: () throws -> T) throws -> T { try body() }
}

extension Database.Connection: MetadataConnection {
    public var dialect: SQLDialect { .sqlite }
    public func lockUntilCommit(_ key: String) throws {}
}
