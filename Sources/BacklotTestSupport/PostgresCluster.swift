import BacklotBasics
import BacklotPostgres
import BacklotStore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL 15 cluster (Debian `postgresql-15`) for tests, started by
/// `scripts/services start postgres` (scripts/lib/postgres.sh: exactly as the demo and the
/// benchmarks start theirs) in a temporary folder, on a free loopback port, with a fresh database
/// per test (``createDatabase(_:)``); ``stop()`` and `deinit` stop it and remove the folder. As
/// root, `initdb` and `postgres` run as the `postgres` user, which they require.
///
/// Nothing is left running when the test process dies instead: the script's watcher (`--owner`)
/// stops the cluster and removes its folder once this process has gone.
///
/// Connections over TCP need a password (`scram-sha-256`): the superuser `backlot` has
/// ``password``, and ``url(database:user:password:)`` puts it in the URI. The Unix socket is
/// `trust`, for the cluster's own administration.
///
/// ```swift
/// let cluster = try PostgresCluster.shared()
/// let url = try cluster.createDatabase("repo")
/// let db = try PostgresDatabase(url: url)
/// ```
public final class PostgresCluster: Sendable {
    /// The services folder: the cluster is in `FOLDER/postgres` (data, socket, log), removed by ``stop()``.
    public let folder: String
    /// Its port, chosen when the cluster first started and kept by every restart.
    public let port: UInt16
    public let superuser = "backlot"
    public let password: String
    /// The folder of the Unix socket.
    public var socketFolder: String { folder + "/postgres" }
    public var dataDirectory: String { folder + "/postgres/data" }
    public var logPath: String { folder + "/postgres/log" }
    private let stopped = Mutex(false)
    private let counter = Mutex(0)

    static let binaries = "/usr/lib/postgresql/15/bin"
    private static let sharedCluster = Mutex<PostgresCluster?>(nil)

    /// One cluster for the whole test process, started on first use. Its folder is under the
    /// system's temporary folder; an `atexit` handler stops it when the test process ends.
    public static func shared() throws -> PostgresCluster {
        try sharedCluster.withLock { cluster in
            if let cluster { return cluster }
            let started = try PostgresCluster()
            cluster = started
            atexit { PostgresCluster.stopShared() }
            return started
        }
    }

    static func stopShared() {
        let cluster = sharedCluster.withLock { $0 }
        cluster?.stop()
    }

    /// Creates and starts a cluster (`scripts/services start postgres`).
    /// - Throws: ``Requirement/Missing`` without PostgreSQL 15 (tests that use a cluster say
    ///   `.requires(.postgres)`); ``BacklotError/Code/io`` with what the script said when it does not start.
    public init() throws {
        try Requirement.postgres.require()
        folder = try FileSystem.makeTemporaryDirectory(
            in: FileManager.default.temporaryDirectory.path, prefix: "backlot-pg-")
        // As root, the postgres user must reach the cluster's folder inside this one.
        chmod(folder, 0o755)
        do {
            try ServicesScript.run(Self.startArguments(folder), folder: folder)
            let values = try ServicesScript.environment(of: folder)
            guard let port = values["BACKLOT_POSTGRES_PORT"].flatMap({ CheckedInteger.parse($0, as: UInt16.self) }),
                let password = values["BACKLOT_POSTGRES_PASSWORD"]
            else {
                throw BacklotError(.io, "scripts/services env printed no PostgreSQL port or password", context: folder)
            }
            self.port = port
            self.password = password
        } catch {
            _ = try? ServicesScript.run(["stop", folder], folder: folder)
            FileSystem.removeTree(folder)
            throw BacklotError(.io, "could not start a PostgreSQL cluster: \(error)", context: folder)
        }
    }

    deinit { stop() }

    private static func startArguments(_ folder: String) -> [String] {
        ["start", "postgres", folder, "--owner", String(getpid()), "--remove"]
    }

    /// Starts the server again (after ``stopServer()``) on its port, waiting until it accepts
    /// connections. The port is outside the kernel's ephemeral range, so nothing but another
    /// explicit bind takes it meanwhile; a start that finds it taken is tried again for 10 s.
    public func start() throws {
        try ServicesScript.run(Self.startArguments(folder), folder: folder)
    }

    /// Stops the server (fast shutdown: connections are closed), keeping its data.
    public func stopServer() throws {
        try ServicesScript.run(["stop", folder, "postgres"], folder: folder)
    }

    /// Stops the server and removes its folder; later calls do nothing.
    public func stop() {
        let first = stopped.withLock { was in
            defer { was = true }
            return !was
        }
        guard first else { return }
        _ = try? ServicesScript.run(["stop", folder], folder: folder)
        FileSystem.removeTree(folder)
    }

    /// `postgresql://USER:PASSWORD@127.0.0.1:PORT/DATABASE` (the superuser and its password by default).
    public func url(database: String, user: String? = nil, password: String? = nil) -> String {
        "postgresql://\(user ?? superuser):\(password ?? self.password)@127.0.0.1:\(port)/\(database)"
    }

    /// A connection to the `postgres` database over the Unix socket, for administration.
    public func administration() throws -> PostgresDatabase {
        try PostgresDatabase(url: "postgresql://\(superuser)@/postgres?host=\(socketFolder)&port=\(port)")
    }

    /// Creates a new, empty database (named `label` and a counter) and returns its URI.
    public func createDatabase(_ label: String = "test") throws -> String {
        let n = counter.withLock { value in
            value += 1
            return value
        }
        let safe = label.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(30)
        let name = "\(safe.isEmpty ? "test" : String(safe))_\(n)"
        let admin = try administration()
        try admin.read { try $0.execute("CREATE DATABASE \(name) TEMPLATE template0") }
        return url(database: name)
    }

    /// Runs SQL in the `postgres` database as the superuser (CREATE ROLE and the like).
    public func administer(_ sql: String) throws {
        let admin = try administration()
        try admin.read { try $0.execute(sql) }
    }
}
