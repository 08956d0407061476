import BacklotBasics
import CSQLite
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A SQLite database (WAL mode) whose connection is owned by this object behind a `Mutex`: every
/// statement runs serialised, and ``transaction(_:)`` makes a group of them atomic. This file is
/// the only one that touches SQLite.
///
/// ```swift
/// let db = try Database(path: "meta.sqlite")
/// try db.transaction { tx in
///     try tx.run("INSERT INTO apps(id) VALUES (?)", ["com.example.game"])
/// }
/// let rows = try db.read { try $0.query("SELECT id FROM apps") }
/// ```
public final class Database: Sendable {
    /// A value bound to, or read from, a statement.
    public enum Value: Sendable, Hashable {
        case null
        case integer(Int64)
        case real(Double)
        case text(String)
        case blob([UInt8])

        public var int: Int64? { if case .integer(let v) = self { v } else { nil } }
        public var string: String? { if case .text(let v) = self { v } else { nil } }
        /// The integer converted to `T` when it fits (nil otherwise: never a trap).
        public func integer<T: FixedWidthInteger>(as type: T.Type) -> T? { int.flatMap { T(exactly: $0) } }
    }

    /// One result row, by column name.
    public typealias Row = [String: Value]

    private let connection: Mutex<Connection>
    public let path: String

    /// Opens (creating if needed) a database in WAL mode with a 5 s busy timeout.
    /// - Parameters:
    ///   - mode: when given, the database file is created with this mode and an existing one (and
    ///     its `-wal` and `-shm` files, which SQLite creates with the database's mode) is set to it,
    ///     whatever the umask — 0600 for a database that holds secrets.
    ///   - pageCacheKiB: the most memory its page cache keeps (SQLite's default: 2,000 KiB); a
    ///     device's small databases take less (``SQLiteSchema/open(_:)``).
    ///
    /// The database and its companions are often in a folder another program can write (a device
    /// container): a link or anything but a regular file at `path` is refused before SQLite opens
    /// it, and the mode is set through each file's own descriptor, never through a link.
    /// - Throws: ``BacklotError/Code/untrusted`` when `path` (or its `-wal`, `-shm` or `-journal`
    ///   file) is a link or not a regular file; ``BacklotError/Code/io`` when it cannot be opened.
    public init(path: String, mode: mode_t? = nil, pageCacheKiB: Int? = nil) throws {
        // (SQLite's own SQLITE_OPEN_NOFOLLOW is not used: it refuses a link anywhere on the way,
        // such as a home folder that is one.)
        if path != Self.inMemory {
            try Self.checkRegularFile(path, creatingWith: mode ?? 0o644, settingMode: mode)
            for suffix in ["-wal", "-shm", "-journal"] where FileSystem.exists(path + suffix) {
                try Self.checkRegularFile(path + suffix, creatingWith: nil, settingMode: mode)
            }
        }
        var handle: OpaquePointer? = nil
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        guard sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            throw BacklotError(.io, "cannot open the database: \(message)", context: path)
        }
        self.path = path
        connection = Mutex(Connection(handle: handle, path: path))
        try connection.withLock { c in
            sqlite3_busy_timeout(c.handle, 5000)
            // Switching a new database to WAL takes an exclusive lock and does not wait for it: when
            // another process opens the same new database at the same moment, try again for a while.
            var attempts = 0
            while true {
                do {
                    try c.execute("PRAGMA journal_mode=WAL")
                    break
                } catch let e as BacklotError where e.message.contains("locked") && attempts < 100 {
                    attempts += 1
                    usleep(50_000)
                }
            }
            try c.execute("PRAGMA synchronous=FULL")
            try c.execute("PRAGMA foreign_keys=ON")
            if let pageCacheKiB { try c.execute("PRAGMA cache_size=-\(max(64, pageCacheKiB))") }
        }
    }

    /// The path SQLite takes for a database held in memory, with no file (no file is looked at).
    public static let inMemory = ":memory:"

    /// Checks that `path` is a regular file and not a link (creating it with `creatingWith` when
    /// given and missing), and sets `settingMode` on it without following a link.
    ///
    /// It is looked at with `lstat`, never opened: closing a descriptor of the file would drop
    /// every POSIX lock this process holds on it, those of SQLite connections already open on it
    /// included. (SQLite then opens the database, its journal and its WAL with `O_NOFOLLOW`.)
    private static func checkRegularFile(_ path: String, creatingWith create: mode_t?, settingMode mode: mode_t?) throws
    {
        if let create {
            // Made only where nothing is (O_EXCL, a link counts): no connection holds a lock on it yet.
            let made = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, create)
            if made >= 0 { close(made) }
        }
        guard let found = try FileSystem.linkStatus(path) else {
            if create == nil { return }  // removed meanwhile: SQLite makes it again
            throw SystemCall.error("create the database", path: path, errno: ENOENT)
        }
        guard found.kind == .regular else {
            throw BacklotError(
                .untrusted, "the database file is \(found.kind == .symlink ? "a symbolic link" : "not a regular file")",
                context: path, hint: "remove what is there: the database is made again where it belongs")
        }
        if let mode, found.mode != UInt32(mode) {
            try SystemCall.retrying("chmod", path: path) { fchmodat(AT_FDCWD, path, mode, AT_SYMLINK_NOFOLLOW) }
        }
    }

    deinit {
        _ = connection.withLock { sqlite3_close_v2($0.handle) }
    }

    /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT`; any error rolls everything back.
    @discardableResult
    public func transaction<T>(_ body: (inout Connection) throws -> T) throws -> T {
        try connection.withLock { c in
            try c.execute("BEGIN IMMEDIATE")
            do {
                let result = try body(&c)
                try c.execute("COMMIT")
                return result
            } catch {
                try? c.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// Runs `body` with the connection, outside any explicit transaction (each statement is atomic).
    @discardableResult
    public func read<T>(_ body: (inout Connection) throws -> T) throws -> T {
        try connection.withLock { c in try body(&c) }
    }

    /// The connection, usable only inside ``transaction(_:)`` or ``read(_:)``.
    // Safe because: the SQLite handle is reached only inside `transaction`/`read`, which hold the `Mutex` that owns
    // the connection (`connection.withLock`); a `Connection` value never outlives that call.
    // Tested: `DatabaseTests.oneHandleIsUsedByThreadsAtOnce`.
    public struct Connection: @unchecked Sendable {
        let handle: OpaquePointer
        let path: String

        func failure(_ sql: String) -> BacklotError {
            let code = sqlite3_extended_errcode(handle)
            let message = String(cString: sqlite3_errmsg(handle))
            if code & 0xFF == SQLITE_CONSTRAINT {
                return BacklotError(.conflict, message, context: path)
            }
            return BacklotError(.io, "SQLite: \(message) (in \(sql.prefix(60)))", context: path)
        }

        /// Runs SQL without results (may hold several statements).
        public func execute(_ sql: String) throws {
            guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else { throw failure(sql) }
        }

        /// Runs one statement with bindings; returns the number of rows changed.
        @discardableResult
        public func run(_ sql: String, _ bindings: [Value] = []) throws -> Int {
            _ = try query(sql, bindings)
            return Int(sqlite3_changes(handle))
        }

        /// The rowid of the last insert.
        public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

        /// Fills the BLOB in `column` of row `rowid` of `table` — made the right size with
        /// `zeroblob(N)` by an earlier statement — a piece at a time (SQLite's incremental BLOB
        /// I/O): `fill` is handed a buffer of up to 256 KiB and returns how many bytes it put in, 0
        /// at its end. Neither the BLOB nor a record holding it is ever whole in memory, as it is
        /// when bound (a release's 12 MB index, copied into a record of its size).
        ///
        /// ```swift
        /// try tx.run("INSERT INTO files(name, data) VALUES (?, zeroblob(?))", [.text("a"), .integer(size)])
        /// try tx.writeBlob(table: "files", column: "data", rowid: tx.lastInsertRowID) { read(into: $0) }
        /// ```
        /// - Throws: ``BacklotError/Code/io`` when SQLite refuses, or `fill` gives more or fewer
        ///   bytes than the BLOB holds; what `fill` throws.
        public func writeBlob(
            table: String, column: String, rowid: Int64, fill: (UnsafeMutableRawBufferPointer) throws -> Int
        ) throws {
            var blob: OpaquePointer? = nil
            let what = "the BLOB \(table).\(column) of row \(rowid)"
            guard sqlite3_blob_open(handle, "main", table, column, rowid, 1, &blob) == SQLITE_OK, let blob else {
                throw failure(what)
            }
            defer { sqlite3_blob_close(blob) }
            let size = Int(sqlite3_blob_bytes(blob))
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
            defer { buffer.deallocate() }
            var offset = 0
            while true {
                // One byte more than is left, so that a fill of too many bytes shows.
                let room = UnsafeMutableRawBufferPointer(
                    rebasing: buffer[0..<min(buffer.count, max(0, size - offset) + 1)])
                let n = try fill(room)
                if n == 0 { break }
                guard n <= room.count, offset + n <= size else {
                    throw BacklotError(.io, "more bytes were given than \(what) holds (\(size))", context: path)
                }
                guard sqlite3_blob_write(blob, room.baseAddress, Int32(n), Int32(offset)) == SQLITE_OK else {
                    throw failure(what)
                }
                offset += n
            }
            guard offset == size else {
                throw BacklotError(.io, "\(offset) bytes were given for \(what), which holds \(size)", context: path)
            }
        }

        /// Runs one statement with bindings and returns its rows.
        func tooLarge(_ sql: String, _ count: Int) -> BacklotError {
            BacklotError(.invalidInput, "a value of \(count) bytes is larger than SQLite binds (2 GiB)", context: path)
        }

        public func query(_ sql: String, _ bindings: [Value] = []) throws -> [Row] {
            var statement: OpaquePointer? = nil
            guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
                throw failure(sql)
            }
            defer { sqlite3_finalize(statement) }
            return try bind(bindings, from: 0, to: statement, sql: sql) { try rows(of: statement, sql: sql) }
        }

        /// Binds `bindings[i...]` to `statement`, then runs `body` inside every binding's scope:
        /// text and blobs are bound in place (`SQLITE_STATIC`, their memory valid until `body`
        /// returns), so a large blob (a release's 12 MB index) is not copied for SQLite.
        private func bind<T>(
            _ bindings: [Value], from i: Int, to statement: OpaquePointer, sql: String, then body: () throws -> T
        ) throws -> T {
            guard i < bindings.count else { return try body() }
            let index = Int32(i + 1)
            func next() throws -> T { try bind(bindings, from: i + 1, to: statement, sql: sql, then: body) }
            func check(_ rc: Int32) throws { guard rc == SQLITE_OK else { throw failure(sql) } }
            switch bindings[i] {
            case .null: try check(sqlite3_bind_null(statement, index))
            case .integer(let v): try check(sqlite3_bind_int64(statement, index, v))
            case .real(let v): try check(sqlite3_bind_double(statement, index, v))
            // Text by its byte count (a NUL inside stays), blobs up to SQLite's 32-bit limit.
            case .text(let v):
                var bytes = Array(v.utf8)
                guard let count = Int32(exactly: bytes.count) else { throw tooLarge(sql, bytes.count) }
                bytes.append(0)
                return try bytes.withUnsafeBufferPointer { b in
                    try b.withMemoryRebound(to: CChar.self) {
                        try check(sqlite3_bind_text(statement, index, $0.baseAddress, count, nil))
                        return try next()
                    }
                }
            case .blob(let v):
                guard let count = Int32(exactly: v.count) else { throw tooLarge(sql, v.count) }
                return try v.withUnsafeBytes {
                    try check(sqlite3_bind_blob(statement, index, $0.baseAddress, count, nil))
                    return try next()
                }
            }
            return try next()
        }

        /// Steps `statement` to its end and returns its rows.
        private func rows(of statement: OpaquePointer, sql: String) throws -> [Row] {
            var rows: [Row] = []
            while true {
                let step = sqlite3_step(statement)
                if step == SQLITE_DONE { break }
                guard step == SQLITE_ROW else { throw failure(sql) }
                var row: Row = [:]
                for c in 0..<sqlite3_column_count(statement) {
                    let name = String(cString: sqlite3_column_name(statement, c))
                    switch sqlite3_column_type(statement, c) {
                    case SQLITE_INTEGER: row[name] = .integer(sqlite3_column_int64(statement, c))
                    case SQLITE_FLOAT: row[name] = .real(sqlite3_column_double(statement, c))
                    case SQLITE_TEXT:
                        let n = Int(sqlite3_column_bytes(statement, c))
                        row[name] = .text(
                            n == 0
                                ? ""
                                : String(
                                    decoding: UnsafeRawBufferPointer(
                                        start: sqlite3_column_text(statement, c), count: n), as: UTF8.self))
                    case SQLITE_BLOB:
                        let n = Int(sqlite3_column_bytes(statement, c))
                        row[name] = .blob(
                            n == 0
                                ? [] : Array(UnsafeRawBufferPointer(start: sqlite3_column_blob(statement, c), count: n))
                        )
                    default: row[name] = .null
                    }
                }
                rows.append(row)
            }
            return rows
        }
    }
}
