import BacklotBasics
import BacklotStore
import CPostgreSQL
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL database reached through libpq, as a ``MetadataDatabase``: a small pool of
/// connections owned by this object (``maximumConnections``, opened as they are needed), each
/// call taking one for itself, so that a transaction that waits — on a lock, or on the object
/// store while a publication holds the channel's lock — does not hold up the others. This module
/// is the only one that touches libpq.
///
/// - Transactions are `SERIALIZABLE`; a serialization failure (SQLSTATE 40001) or a deadlock
///   (40P01) runs the transaction again, at most ``maximumAttempts`` times.
/// - Unique and foreign-key violations (23505, 23503) are ``BacklotError/Code/conflict``.
/// - A lost connection is ``BacklotError/Code/unavailable``; the next call connects again by
///   itself (`PQreset`). A call whose first statement finds the connection dead (the server was
///   restarted since the last call) reconnects and runs once more: nothing of it had run.
/// - Statements use `?` placeholders, numbered `$1…` here outside quoted text; parameters go in
///   text format (bytes in binary format), results come back in text format and are converted
///   with checked conversions (a value that does not fit is an error, never a trap).
///
/// ```swift
/// let db = try PostgresDatabase(url: "postgresql://backlot@db.internal:5432/backlot")
/// try db.transaction { tx in
///     try tx.run("INSERT INTO apps(id, created) VALUES (?, ?)", [.text("com.example.game"), .integer(0)])
/// }
/// ```
public final class PostgresDatabase: MetadataDatabase {
    /// How many times a transaction runs at most when it keeps meeting serialization failures.
    public static let maximumAttempts = 30

    public var dialect: SQLDialect { .postgresql }
    /// `postgresql://USER@HOST:PORT/DB`, never with a password.
    public let displayName: String
    /// The most connections open at once; a call waits while all are in use.
    public let maximumConnections: Int
    private let url: String
    private let connectTimeout: Int
    /// Open connections nobody uses now.
    private let idle: Mutex<[Connection]>
    /// Counts the calls that may take a connection (open or still to open).
    private let slots: DispatchSemaphore

    /// Connects with a libpq connection URI or `key=value` string (`postgresql://USER@HOST:PORT/DB`).
    /// The password comes from the URI, `PGPASSWORD` or `~/.pgpass`, which libpq reads itself.
    /// - Parameters:
    ///   - connectTimeout: seconds to wait for the server at each connection attempt (a
    ///     `connect_timeout` in the URI wins).
    ///   - maximumConnections: the pool's size (at least 1). One connection is opened here, to
    ///     check the URI; the others when calls at once need them.
    /// - Throws: ``BacklotError/Code/unavailable`` naming `host:port/db` when the server cannot be
    ///   reached; ``BacklotError/Code/forbidden`` when authentication failed (naming the user);
    ///   ``BacklotError/Code/notFound`` when the database does not exist;
    ///   ``BacklotError/Code/invalidInput`` for a URI libpq cannot read.
    public init(url: String, connectTimeout: Int = 10, maximumConnections: Int = 4) throws {
        var parseError: UnsafeMutablePointer<CChar>? = nil
        if let options = PQconninfoParse(url, &parseError) {
            PQconninfoFree(options)
        } else {
            let detail = parseError.map { String(cString: $0) } ?? "out of memory"
            PQfreemem(parseError)
            throw BacklotError(
                .invalidInput, "not a PostgreSQL connection URI: \(Self.trimmed(detail))", context: "--database",
                hint: "use postgresql://USER@HOST:PORT/DATABASE (the password from PGPASSWORD or ~/.pgpass)")
        }
        let first = try Self.open(url, timeout: connectTimeout)
        displayName = first.name
        self.url = url
        self.connectTimeout = connectTimeout
        self.maximumConnections = max(1, maximumConnections)
        idle = Mutex([first])
        slots = DispatchSemaphore(value: self.maximumConnections)
    }

    deinit {
        idle.withLock { for c in $0 { PQfinish(c.handle) } }
    }

    /// Opens a connection and sets it up.
    /// - Throws: what ``connectionFailure(_:name:user:)`` makes of libpq's refusal.
    static func open(_ url: String, timeout: Int) throws -> Connection {
        let handle = Self.connect(url, timeout: timeout)
        let name = Self.name(of: handle)
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = Self.trimmed(String(cString: PQerrorMessage(handle)))
            let user = PQuser(handle).map { String(cString: $0) } ?? "?"
            PQfinish(handle)
            throw Self.connectionFailure(message, name: name, user: user)
        }
        let connection = Connection(handle: handle, name: name)
        // Quiet notices ("relation exists, skipping"); text is UTF-8.
        do {
            try connection.execute("SET client_min_messages = warning; SET client_encoding = 'UTF8'")
        } catch {
            PQfinish(handle)
            throw error
        }
        return connection
    }

    /// Runs `body` with a connection of the pool to itself (an idle one, or a new one while fewer
    /// than ``maximumConnections`` are open), and gives it back.
    private func withConnection<T>(_ body: (inout Connection) throws -> T) throws -> T {
        slots.wait()
        defer { slots.signal() }
        var c = try idle.withLock { $0.popLast() } ?? Self.open(url, timeout: connectTimeout)
        defer { idle.withLock { [c] in $0.append(c) } }
        return try body(&c)
    }

    @discardableResult
    public func transaction<T>(_ body: (inout any MetadataConnection) throws -> T) throws -> T {
        try withConnection { c in
            var attempt = 0
            while true {
                attempt += 1
                try c.reconnectIfNeeded()
                c.state.clear()
                var committing = false
                do {
                    try c.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
                    var erased: any MetadataConnection = c
                    let result = try body(&erased)
                    committing = true
                    try c.execute("COMMIT")
                    return result
                } catch {
                    let lost = c.state.connectionLost
                    let sqlState = c.state.sqlState
                    if !lost { try? c.execute("ROLLBACK") }
                    // died before BEGIN ran
                    if lost && !committing && attempt == 1 && c.state.statements == 0 { continue }
                    if sqlState == "40001" || sqlState == "40P01" {
                        guard attempt < Self.maximumAttempts else {
                            throw BacklotError(
                                .conflict, "the change met \(attempt) concurrent changes in a row and was not made",
                                context: displayName, hint: "try again")
                        }
                        // Random, growing pauses (up to 50 ms) so that the writers that keep meeting spread out.
                        usleep(UInt32.random(in: 1_000...5_000) * UInt32(min(attempt, 10)))
                        continue
                    }
                    throw error
                }
            }
        }
    }

    @discardableResult
    public func read<T>(_ body: (inout any MetadataConnection) throws -> T) throws -> T {
        try withConnection { c in
            var attempt = 0
            while true {
                attempt += 1
                try c.reconnectIfNeeded()
                c.state.clear()
                do {
                    var erased: any MetadataConnection = c
                    return try body(&erased)
                } catch {
                    if c.state.connectionLost && c.state.statements == 0 && attempt == 1 { continue }
                    throw error
                }
            }
        }
    }

    /// A session advisory lock, taken and released on a connection of its own (outside the pool,
    /// so that `body`'s calls take pool connections as usual and the lock is released on the
    /// session that holds it).
    @discardableResult
    public func withExclusiveLock<T>(_ name: String, _ body: () throws -> T) throws -> T {
        let lock = try Self.open(url, timeout: connectTimeout)
        defer { PQfinish(lock.handle) }  // ending the session releases the lock, whatever happened
        try lock.run("SELECT pg_advisory_lock(hashtextextended(?, 0))", [.text(name)])
        return try body()
    }

    // MARK: Connecting

    static func connect(_ url: String, timeout: Int) -> OpaquePointer? {
        // expand_dbname: the URI's own settings override the ones before it. TCP keepalives find a
        // server that vanished without closing the connection in about a minute.
        let keywords = [
            "connect_timeout", "application_name", "keepalives_idle", "keepalives_interval", "keepalives_count",
            "dbname",
        ]
        let values = ["\(max(1, timeout))", "backlot", "30", "10", "3", url]
        let k = keywords.map { strdup($0) } + [nil]
        let v = values.map { strdup($0) } + [nil]
        defer { for p in k + v { free(p) } }
        return k.map { UnsafePointer($0) }.withUnsafeBufferPointer { kp in
            v.map { UnsafePointer($0) }.withUnsafeBufferPointer { vp in
                PQconnectdbParams(kp.baseAddress, vp.baseAddress, 1)
            }
        }
    }

    /// `postgresql://USER@HOST:PORT/DB` from what libpq resolved (defaults included).
    static func name(of handle: OpaquePointer?) -> String {
        func text(_ p: UnsafeMutablePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }
        let host = text(PQhost(handle))
        let shownHost = host.isEmpty ? "localhost" : (host.hasPrefix("/") ? "[\(host)]" : host)
        return "postgresql://\(text(PQuser(handle)))@\(shownHost):\(text(PQport(handle)))/\(text(PQdb(handle)))"
    }

    static func connectionFailure(_ message: String, name: String, user: String) -> BacklotError {
        // host:port/db (the user is named separately where it matters).
        let at = name.split(separator: "@", maxSplits: 1).last.map(String.init) ?? name
        if message.contains("authentication failed") || message.contains("no password supplied") {
            return BacklotError(
                .forbidden, "PostgreSQL authentication failed for user \"\(user)\" at \(at): \(message)", context: name,
                hint: "check the password: in the URI, in PGPASSWORD or in ~/.pgpass (mode 0600)")
        }
        if message.contains("does not exist") && message.contains("database") {
            return BacklotError(
                .notFound, "the PostgreSQL database of \(at) does not exist: \(message)", context: name,
                hint: "create it first (createdb), or check the name in the URI")
        }
        return BacklotError(
            .unavailable, "cannot connect to PostgreSQL at \(at): \(message)", context: name,
            hint: "check that the server runs and accepts connections on that host and port")
    }

    static func trimmed(_ text: String) -> String {
        text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(
            separator: "; ")
    }
}
