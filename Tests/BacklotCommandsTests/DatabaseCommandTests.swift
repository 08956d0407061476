import BacklotBasics
import BacklotCommands
import BacklotTestSupport
import Foundation
import Testing

/// `--database` on the command line, against a real PostgreSQL: the first admin token printed
/// once, and every way the database can be wrong named with what to do.
@Suite(.serialized) struct DatabaseCommandTests {
    func run(_ args: [String]) -> (status: Int32, out: String, err: String) {
        let io = CapturedIO()
        let status = BacklotCLI.main(args, io: io)
        return (status, io.standardOutput, io.standardError)
    }

    @Test(.requires(.postgres)) func adminInitPrintsTheFirstTokenOnceAndRefusesASecond() throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.createDatabase("cli")
        let first = run(["admin", "init", "--database", url])
        #expect(first.status == 0, "\(first.err)")
        #expect(first.out.hasPrefix("blt_") && first.out.utf8.count == 69, "\(first.out)")
        #expect(first.err.contains("only time"))
        let second = run(["admin", "init", "--database", url])
        // A conflict is the caller's to resolve (exit 2, as every refused input), and nothing is printed on stdout.
        #expect(second.status == 2 && second.out.isEmpty, "\(second)")
        #expect(second.err.contains("an admin token exists already") && second.err.contains("hint:"), "\(second.err)")
        // The token printed is an admin token of that database: `catalog resign` opens it too.
        let dir = try TemporaryDirectory("cli-db")
        defer { dir.remove() }
        let resign = run(["catalog", "resign", "--data", dir.at("data"), "--database", url])
        #expect(resign.status == 0, "\(resign.err)")
    }

    @Test(.requires(.postgres)) func aWrongPasswordNamesTheUserAndNeverPrintsThePassword() throws {
        let cluster = try PostgresCluster.shared()
        let role = "bob\(UInt32.random(in: 0...UInt32.max))"
        try cluster.administer("CREATE ROLE \(role) LOGIN PASSWORD 'right-password'")
        let url = cluster.url(database: "postgres", user: role, password: "s3cret-wrong")
        let r = run(["admin", "init", "--database", url])
        #expect(r.status == 2)  // wrong credentials are the caller's input (forbidden), not a failure of the server
        #expect(r.err.contains("authentication failed") && r.err.contains(role), "\(r.err)")
        #expect(!r.err.contains("s3cret-wrong"))
    }

    @Test func anUnreachableDatabaseStopsTheServerBeforeItServesAndNamesWhere() throws {
        // Bound and never listening for as long as the test runs: connections to it are refused.
        let nobody = try FreePort.bound()
        defer { nobody.release() }
        let port = nobody.port
        let dir = try TemporaryDirectory("cli-db")
        defer { dir.remove() }
        let url = "postgresql://backlot@127.0.0.1:\(port)/backlot?connect_timeout=2"
        let serve = run([
            "serve", "--data", dir.at("data"), "--database", url, "--port", "0", "--tls", "off", "--quiet",
        ])
        #expect(serve.status == 1, "\(serve)")
        #expect(serve.err.contains("127.0.0.1:\(port)") && serve.err.contains("backlot"), "\(serve.err)")
        #expect(!serve.out.contains("Serving"))
        let initialisation = run(["admin", "init", "--database", url])
        #expect(initialisation.status == 1 && initialisation.err.contains("127.0.0.1:\(port)"), "\(initialisation.err)")
    }

    /// Two data folders on one database without a shared bucket (issue #25, F8): the second is
    /// refused before it serves anything, naming the folder the database belongs to.
    @Test(.requires(.postgres)) func aSecondFolderOnOneDatabaseIsRefusedWithWhatToDo() throws {
        let url = try PostgresCluster.shared().createDatabase("two_folders")
        let dir = try TemporaryDirectory("cli-two-folders")
        defer { dir.remove() }
        let first = run(["catalog", "resign", "--data", dir.at("one"), "--database", url])
        #expect(first.status == 0, "\(first.err)")
        let serve = run(["serve", "--data", dir.at("two"), "--database", url, "--port", "0", "--tls", "off", "--quiet"])
        #expect(serve.status == 2, "\(serve)")
        #expect(serve.err.contains(dir.at("one")) && serve.err.contains("--storage"), "\(serve.err)")
        #expect(serve.err.contains("--adopt-storage") && !serve.out.contains("Serving"), "\(serve.err)")
        let again = run(["catalog", "resign", "--data", dir.at("one"), "--database", url])
        #expect(again.status == 0, "\(again.err)")
    }

    @Test func aDatabaseThatIsNotPostgreSQLIsAUsageError() throws {
        let r = run(["admin", "init", "--database", "mysql://root@127.0.0.1/backlot"])
        #expect(r.status == 2 && r.err.contains("postgresql://"), "\(r.err)")
        let missing = run(["admin", "init"])
        #expect(missing.status == 2 && missing.err.contains("--database"), "\(missing.err)")
    }
}
