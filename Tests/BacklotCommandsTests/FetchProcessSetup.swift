import BacklotBasics
import BacklotContainer
import BacklotHTTPServer
import BacklotRepository
import BacklotStore
import BacklotTestSupport
import Foundation
import Testing

/// What the tests that kill `backlot fetch` mid-download share: a server with one app, the
/// command run against it, its report, and how far its container got.
protocol FetchProcessSetup {
    var dir: TemporaryDirectory { get }
    var repository: Repository { get }
    var server: HTTPServer { get }
}

extension FetchProcessSetup {
    /// Starts `backlot fetch --json` of app `a`'s internal channel into `container` (its standard
    /// error is the test's, its report on a pipe).
    func fetch(container: String) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ProcessTests.binary)
        p.arguments = [
            "fetch", "--catalog", "http://127.0.0.1:\(server.port)/v1/apps/a/internal/catalog.json",
            "--trust", repository.directory.publicKeyPath, "--container", dir.at(container), "--json",
        ]
        p.standardOutput = Pipe()
        p.standardError = FileHandle(forWritingAtPath: "/dev/stderr") ?? FileHandle.nullDevice
        try p.run()
        return p
    }

    /// What the command printed.
    func report(_ p: Process) -> String {
        String(decoding: (p.standardOutput as! Pipe).fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    /// The chunks the container has verified so far (of any release being assembled).
    func doneChunks(_ container: String) -> Int {
        let path = ContainerLayout(root: dir.at(container)).stateDatabase
        guard FileSystem.exists(path), let db = try? Database(path: path) else { return 0 }
        return Int((try? db.read { try $0.query("SELECT COUNT(*) AS n FROM chunks_done") })?.first?["n"]?.int ?? 0)
    }
}
