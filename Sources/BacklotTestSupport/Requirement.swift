import BacklotBasics
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Something a test needs from the machine — an engine (PostgreSQL 15, nginx), a tool (zsh,
/// fish), a library (libfaketime) or root — and cannot pass without: the one place where tests
/// say so.
///
/// When it is missing, the test **fails**, naming what is missing and how to get it
/// (`scripts/bootstrap` installs every package the tests use). The one escape is
/// `BACKLOT_ALLOW_SKIP=1`, set on purpose: the test is then skipped instead, and says so —
/// Swift Testing's `Test NAME skipped: "SKIPPED (BACKLOT_ALLOW_SKIP=1): needs …"` line, a
/// `SKIPPED (BACKLOT_ALLOW_SKIP=1): NAME needs …` line printed at once, and the list of every such
/// skip printed again after the run's summary.
///
/// ```swift
/// @Test(.requires(.postgres)) func sharesOneDatabase() throws { … }
/// @Suite(.serialized, .requires(.root)) struct MountTests { … }
/// let zsh = try Requirement.tool("zsh").path()   // inside a test: its path, or the same failure or skip
/// ```
public struct Requirement: Sendable, CustomStringConvertible {
    /// What is needed, as a person names it ("PostgreSQL 15", "zsh", "root").
    public let name: String
    /// How to get it.
    public let howToGet: String
    /// Where it is (a path, or a word such as "uid 0"); nil when this machine lacks it.
    private let locate: @Sendable () -> String?

    public init(_ name: String, howToGet: String, locate: @escaping @Sendable () -> String?) {
        self.name = name
        self.howToGet = howToGet
        self.locate = locate
    }

    public var description: String { name }

    /// Where it is on this machine, or nil.
    public var location: String? { locate() }
    public var isMet: Bool { location != nil }

    /// Whether a missing requirement may skip its test instead of failing it (`BACKLOT_ALLOW_SKIP=1`).
    public static var skipsAllowed: Bool { ProcessInfo.processInfo.environment["BACKLOT_ALLOW_SKIP"] == "1" }

    /// Why a test cannot run: what is missing and how to get it.
    public struct Missing: Error, CustomStringConvertible {
        public let requirement: Requirement
        public var description: String {
            "\(requirement.name) is required and missing on this machine: \(requirement.howToGet)"
                + " (or set BACKLOT_ALLOW_SKIP=1 to skip the tests that need it, on purpose)"
        }
    }

    // MARK: What the tests need

    /// PostgreSQL 15's server programs (Debian's `postgresql-15`), which ``PostgresCluster`` runs.
    public static let postgres = Requirement(
        "PostgreSQL 15 (\(PostgresCluster.binaries)/initdb)",
        howToGet: "apt-get install postgresql-15 (scripts/bootstrap installs it)"
    ) {
        let initdb = PostgresCluster.binaries + "/initdb"
        guard FileManager.default.isExecutableFile(atPath: initdb) else { return nil }
        // As root the cluster runs as the postgres user, through runuser.
        if getuid() == 0 && getpwnam("postgres") == nil { return nil }
        return initdb
    }

    /// Root: the test mounts a file system of its own, or changes owners.
    public static let root = Requirement(
        "root (uid 0)",
        howToGet: "run the tests as root (sudo, or a container as CI does)"
    ) { getuid() == 0 ? "uid 0" : nil }

    /// Debian's libfaketime, which steps the wall clock of a process under test.
    public static let libfaketime = Requirement(
        "libfaketime (libfaketime.so.1)",
        howToGet: "apt-get install faketime (scripts/bootstrap installs it)"
    ) {
        [
            "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
            "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1",
        ].first { FileManager.default.fileExists(atPath: $0) }
    }

    /// nginx, at the path the helpers run it from (``Nginx``, ``EdgeCache``, ``NginxFileServer``).
    public static let nginx = Requirement(
        "nginx (/usr/sbin/nginx)",
        howToGet: "apt-get install nginx-light (scripts/bootstrap installs it)"
    ) { FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") ? "/usr/sbin/nginx" : nil }

    /// Debian's varnish, which ``VarnishEdge`` runs with `contrib/varnish/edge.vcl`.
    public static let varnish = Requirement(
        "varnish (/usr/sbin/varnishd)",
        howToGet: "apt-get install varnish (scripts/bootstrap installs it)"
    ) { FileManager.default.isExecutableFile(atPath: "/usr/sbin/varnishd") ? "/usr/sbin/varnishd" : nil }

    public static let zsh = tool("zsh")
    public static let fish = tool("fish")

    /// A program found on `PATH`, from the Debian package `package` (its own name by default).
    public static func tool(_ program: String, package: String? = nil) -> Requirement {
        Requirement(
            "\(program) (on PATH)",
            howToGet: "apt-get install \(package ?? program) (scripts/bootstrap installs it)"
        ) { ChildProcess.findExecutable(program) }
    }

    // MARK: Checking

    /// The comment of a skipped test.
    var skipComment: String { "SKIPPED (BACKLOT_ALLOW_SKIP=1): needs \(name): \(howToGet)" }

    /// Whether the test may run: true when this is met; false (a visible skip) when it is not and
    /// skips are allowed; otherwise throws ``Missing``, which fails the test.
    func allowsRunning() throws -> Bool {
        if isMet { return true }
        guard Self.skipsAllowed else { throw Missing(requirement: self) }
        Self.noteSkip(Test.current?.name ?? "a suite", self)
        return false
    }

    /// Where it is, at the start of a test (or of a helper a test calls): when it is missing, the
    /// test fails with ``Missing``; with `BACKLOT_ALLOW_SKIP=1` it records a known issue (counted
    /// in the run's summary: "passed … with N known issues") and is cancelled, which Swift Testing
    /// shows as `Test NAME was cancelled … "SKIPPED (BACKLOT_ALLOW_SKIP=1): …"` (a test case of a
    /// parameterized test shows the known issue only).
    @discardableResult
    public func path(
        fileID: String = #fileID, filePath: String = #filePath, line: Int = #line, column: Int = #column
    ) throws -> String {
        if let location { return location }
        let missing = Missing(requirement: self)
        guard Self.skipsAllowed else { throw missing }
        Self.noteSkip(Test.current?.name ?? "a test", self)
        let sourceLocation = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        withKnownIssue(Comment(rawValue: skipComment), sourceLocation: sourceLocation) { throw missing }
        try Test.cancel(Comment(rawValue: skipComment), sourceLocation: sourceLocation)
    }

    /// Fails (or, when allowed, cancels) the current test unless this is met.
    public func require(
        fileID: String = #fileID, filePath: String = #filePath, line: Int = #line, column: Int = #column
    ) throws {
        try path(fileID: fileID, filePath: filePath, line: line, column: column)
    }

    // MARK: The record of skips

    private static let skips = Mutex<[String]>([])

    private static func noteSkip(_ test: String, _ requirement: Requirement) {
        print("SKIPPED (BACKLOT_ALLOW_SKIP=1): \(test) needs \(requirement.name): \(requirement.howToGet)")
        let first = skips.withLock { list -> Bool in
            defer { list.append("\(test) needs \(requirement.name)") }
            return list.isEmpty
        }
        // Printed again when the test process ends, after Swift Testing's summary.
        if first { atexit { Requirement.printSkips() } }
    }

    private static func printSkips() {
        let list = skips.withLock { $0 }
        guard !list.isEmpty else { return }
        var text = "SKIPPED (BACKLOT_ALLOW_SKIP=1): \(list.count) test(s) did not run for what this machine lacks:\n"
        for line in list { text += "  - \(line)\n" }
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test (or every test of the suite) only where `requirements` are met; otherwise it
    /// fails naming what is missing, or is skipped, visibly, with `BACKLOT_ALLOW_SKIP=1` (``Requirement``).
    public static func requires(
        _ requirements: Requirement..., fileID: String = #fileID, filePath: String = #filePath, line: Int = #line,
        column: Int = #column
    ) -> Self {
        let comment = requirements.map(\.skipComment).joined(separator: "; ")
        let sourceLocation = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        return .enabled(Comment(rawValue: comment), sourceLocation: sourceLocation) {
            for requirement in requirements where try !requirement.allowsRunning() { return false }
            return true
        }
    }
}
