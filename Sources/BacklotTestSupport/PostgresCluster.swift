import BacklotBasics
import BacklotPostgres
import BacklotStore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL 15 cluster (Debian `postgresql-15`) for tests: `initdb` into a temporary
/// folder, `pg_ctl start` on a free loopback port, a fresh database per test
/// (``createDatabase(_:)``), and `pg_ctl stop` plus removal of the folder in ``stop()`` and in
/// `deinit`. As root, `initdb` and `postgres` run as the `postgres` user (`runuser`), which they
/// require.
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
// Safe because: `port` is its only `var`, written while the cluster starts (in `shared()`, under
// `sharedCluster`'s `Mutex`), before any other thread can have it; everything else is `let` or behind a `Mutex`.
public final class PostgresCluster: @unchecked Sendable {
    /// The folder holding the data directory, the socket and the log (removed by ``stop()``).
    public let folder: String
    /// Its port, chosen by ``FreePort`` (set once, when the first start finds one free).
    public private(set) var port: UInt16 = 0
    public let superuser = "backlot"
    public let password: String
    public var dataDirectory: String { folder + "/data" }
    public var logPath: String { folder + "/server.log" }
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

    /// Creates and starts a cluster, on a port from ``FreePort`` (another one when the server
    /// finds it taken).
    /// - Throws: ``Requirement/Missing`` without PostgreSQL 15 (tests that use a cluster say
    ///   `.requires(.postgres)`); ``BacklotError/Code/io`` with the server's log when it does not start.
    public init() throws {
        try Requirement.postgres.require()
        folder = try FileSystem.makeTemporaryDirectory(
            in: FileManager.default.temporaryDirectory.path, prefix: "backlot-pg-")
        var bytes = [UInt8](repeating: 0, count: 12)
        var generator = SystemRandomNumberGenerator()
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255, using: &generator) }
        password = bytes.map { String(format: "%02x", $0) }.joined()
        do {
            try startWatchdog()
            chmod(folder, 0o755)
            if getuid() == 0 { try Self.run("/bin/chown", ["postgres:postgres", folder], asPostgres: false) }
            let passwordFile = folder + "/password"
            try password.write(toFile: passwordFile, atomically: false, encoding: .utf8)
            chmod(passwordFile, 0o600)
            if getuid() == 0 { try Self.run("/bin/chown", ["postgres:postgres", passwordFile], asPostgres: false) }
            try Self.run(
                Self.binaries + "/initdb",
                [
                    "-D", dataDirectory, "-U", superuser, "--pwfile", passwordFile,
                    "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync", "--no-instructions",
                    "-E", "UTF8", "--locale=C",
                ])
            unlink(passwordFile)
            port = try FreePort.starting("PostgreSQL") { port in
                try launch(port: port)
                return port
            }
        } catch {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            FileSystem.removeTree(folder)
            throw BacklotError(
                .io, "could not start a PostgreSQL cluster: \(error)\n\(log.suffix(2000))", context: folder)
        }
    }

    deinit { stop() }

    /// A detached shell that stops the server and removes the folder once this process is gone,
    /// however it ended (a crash runs no `deinit` and no `atexit` handler).
    private func startWatchdog() throws {
        let asPostgres = getuid() == 0 ? "/usr/sbin/runuser -u postgres -- " : ""
        let script =
            "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; "
            + "\(asPostgres)\(Self.binaries)/pg_ctl -D '\(dataDirectory)' -m immediate -s stop >/dev/null 2>&1; rm -rf '\(folder)'"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setsid")
        process.arguments = ["--fork", "/bin/sh", "-c", script]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // `setsid --fork` exits at once, leaving the shell to init. Reap it here, with waitpid
        // (Foundation left it a zombie): an unreaped child of the test process makes Swift
        // Testing's exit-test waiter (waitid(P_ALL, WNOWAIT)) see that zombie for ever and never
        // the exit test's own child, so the exit test hangs.
        var status: Int32 = 0
        while waitpid(process.processIdentifier, &status, 0) < 0 && errno == EINTR {}
    }

    /// Starts the server again (after ``stopServer()``) on its port, waiting until it accepts
    /// connections. The port is outside the kernel's ephemeral range (``FreePort``), so nothing
    /// but another explicit bind takes it meanwhile; a start that finds it taken is tried again
    /// for up to 10 s before it fails.
    public func start() throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            do {
                return try launch(port: port)
            } catch let error as FreePort.InUse where ContinuousClock.now < deadline {
                _ = error
                usleep(200_000)
            }
        }
    }

    /// `pg_ctl start` on `port`.
    /// - Throws: ``FreePort/InUse`` when the server could not bind the port; what pg_ctl said otherwise.
    private func launch(port: UInt16) throws {
        let logStart = (try? FileManager.default.attributesOfItem(atPath: logPath)[.size] as? Int) ?? 0
        do {
            try Self.run(
                Self.binaries + "/pg_ctl",
                [
                    "-D", dataDirectory, "-l", logPath, "-w", "-s", "-t", "30", "start", "-o",
                    "-k \(folder) -p \(port) -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
                        + "-c full_page_writes=off -c shared_buffers=32MB -c max_connections=200",
                ])
        } catch {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            let thisStart = String(log.utf8.dropFirst(logStart)) ?? log
            if FreePort.saysAddressInUse(thisStart) {
                throw FreePort.InUse(port: port, detail: String(thisStart.suffix(500)))
            }
            throw error
        }
    }

    /// Stops the server (fast shutdown: connections are closed), keeping its data.
    public func stopServer() throws {
        try Self.run(Self.binaries + "/pg_ctl", ["-D", dataDirectory, "-m", "fast", "-w", "-s", "stop"])
    }

    /// Stops the server and removes its folder; later calls do nothing.
    public func stop() {
        let first = stopped.withLock { was in
            defer { was = true }
            return !was
        }
        guard first else { return }
        _ = try? Self.run(Self.binaries + "/pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "-s", "stop"])
        FileSystem.removeTree(folder)
    }

    /// `postgresql://USER:PASSWORD@127.0.0.1:PORT/DATABASE` (the superuser and its password by default).
    public func url(database: String, user: String? = nil, password: String? = nil) -> String {
        "postgresql://\(user ?? superuser):\(password ?? self.password)@127.0.0.1:\(port)/\(database)"
    }

    /// A connection to the `postgres` database over the Unix socket, for administration.
    public func administration() throws -> PostgresDatabase {
        try PostgresDatabase(url: "postgresql://\(superuser)@/postgres?host=\(folder)&port=\(port)")
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

    /// Runs a PostgreSQL program (as the `postgres` user when this is root), its output captured,
    /// for at most a minute.
    /// - Throws: ``BacklotError/Code/io`` with the output when it fails or takes longer.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], asPostgres: Bool = true) throws -> String {
        let asRoot = asPostgres && getuid() == 0
        let child = try ChildProcess.start(
            executable: asRoot ? "/usr/sbin/runuser" : executable,
            arguments: asRoot ? ["-u", "postgres", "--", executable] + arguments : arguments,
            environment: ProcessInfo.processInfo.environment, captureOutput: true)
        try child.release()
        let outcome = child.wait(until: .now + .seconds(60), keepingLast: 64 << 10)
        let text = String(decoding: outcome.output, as: UTF8.self)
        guard outcome.succeeded else {
            let how =
                outcome.timedOut
                ? "took longer than 60 s"
                : "failed (status \(outcome.exitStatus.map(String.init) ?? "?"), signal \(outcome.signal.map(String.init) ?? "none"))"
            throw BacklotError(
                .io, "\(executable.split(separator: "/").last.map(String.init) ?? executable) \(how): \(text)",
                context: executable)
        }
        return text
    }
}
