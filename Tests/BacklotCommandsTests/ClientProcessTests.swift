import BacklotBasics
import BacklotClient
import BacklotFormat
import BacklotRepository
import BacklotServer
import BacklotStore
import BacklotTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `backlot fetch` as a real process: kill -9 in the middle of an install, then a restart that
/// completes with identical files and fetches only what was missing; two processes at once.
@Suite(.serialized) struct ClientProcessTests {
    final class Setup: @unchecked Sendable {
        let dir: TemporaryDirectory
        let repository: Repository
        let server: HTTPServer
        let source: String
        let packBytes: Int

        /// A 40 MiB pack (random data: five 8 MiB Range requests) behind a server that delays each Range answer.
        init(delayMicroseconds: UInt32) throws {
            dir = try TemporaryDirectory("fetch-kill")
            repository = try Repository(directory: RepositoryDirectory(path: dir.at("data")))
            try repository.createApp("a")
            try repository.createPack(app: "a", id: "Big")
            var g = SeededGenerator(seed: 99)
            try dir.write("src/big.bin", g.bytes(40 << 20))
            try dir.write("src/small.txt", g.text(10_000))
            source = dir.at("src")
            let path = try SamplePack.build(in: dir, manifestJSON: SamplePack.manifest(id: "Big"), averageChunkSize: 256 << 10)
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            packBytes = bytes.count
            let v = try repository.createVersion(app: "a", pack: "Big", size: UInt64(bytes.count))
            let upload = try repository.beginUpload(app: "a", pack: "Big", number: v.number, offset: 0)
            try bytes.withUnsafeBytes { try upload.append($0) }
            try upload.close()
            repository.waitForProcessing()
            try repository.release(app: "a", pack: "Big", version: 1, channel: .internal)
            let tree = try StaticTree(root: repository.directory.publicTreePath)
            server = try HTTPServer(configuration: .init(port: 0)) { request in
                if request.header("Range") != nil { usleep(delayMicroseconds) }
                return .respond(tree.respond(to: request))
            }
        }

        deinit {
            server.stop(grace: 0)
            dir.remove()
        }

        func fetch(container: String) throws -> Process {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: ProcessTests.binary)
            p.arguments = ["fetch", "--catalog", "http://127.0.0.1:\(server.port)/v1/apps/a/internal/catalog.json",
                           "--trust", repository.directory.publicKeyPath, "--container", dir.at(container), "--json"]
            p.standardOutput = Pipe()
            p.standardError = FileHandle.nullDevice
            try p.run()
            return p
        }

        func report(_ p: Process) -> String {
            String(decoding: (p.standardOutput as! Pipe).fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        }

        func doneChunks(_ container: String) -> Int {
            guard FileSystem.exists(dir.at(container) + "/state.sqlite"), let db = try? Database(path: dir.at(container) + "/state.sqlite") else { return 0 }
            return Int((try? db.read { try $0.query("SELECT COUNT(*) AS n FROM chunks_done") })?.first?["n"]?.int ?? 0)
        }
    }

    static func downloaded(_ json: String) -> UInt64 {
        guard let r = json.range(of: "\"downloadedBytes\": ") else { return 0 }
        return UInt64(json[r.upperBound...].prefix { $0.isNumber }) ?? 0
    }

    @Test func killedMidInstallTheNextRunFinishesWithIdenticalFilesAndFetchesOnlyWhatWasMissing() throws {
        var g = SeededGenerator.fromEnvironment()
        print("killedMidInstall seed: \(g.seed) (BACKLOT_TEST_SEED replays it)")
        let s = try Setup(delayMicroseconds: 250_000)
        for round in 0..<3 {
            let container = "c\(round)"
            let first = try s.fetch(container: container)
            // Kill once some chunks are recorded, after a random extra delay drawn from the seed.
            for _ in 0..<600 where first.isRunning && s.doneChunks(container) == 0 { usleep(10_000) }
            usleep(useconds_t(g.next() % 100_000))
            let wasRunning = first.isRunning
            kill(first.processIdentifier, SIGKILL)
            first.waitUntilExit()
            // No half-installed pack is ever visible: either nothing is installed, or all of it.
            let status = try ClientContainer(path: s.dir.at(container)).installed()
            #expect(status.isEmpty || status.first?.version == 1)
            let second = try s.fetch(container: container)
            second.waitUntilExit()
            let json = s.report(second)
            #expect(second.terminationStatus == 0, "\(json)")
            if wasRunning && status.isEmpty {
                #expect(Self.downloaded(json) < UInt64(s.packBytes), "round \(round): the restart fetched everything again: \(json)")
            }
            let installed = try #require(try ClientContainer(path: s.dir.at(container)).installed().first)
            let folder = try ClientContainer(path: s.dir.at(container)).releaseFolder("Big", digest: installed.digest)
            #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/big.bin")) == Data(contentsOf: URL(fileURLWithPath: s.source + "/big.bin")))
        }
    }

    @Test func twoProcessesOnOneContainerDownloadOnce() throws {
        let s = try Setup(delayMicroseconds: 50_000)
        let a = try s.fetch(container: "shared"), b = try s.fetch(container: "shared")
        a.waitUntilExit()
        b.waitUntilExit()
        #expect(a.terminationStatus == 0 && b.terminationStatus == 0)
        let total = Self.downloaded(s.report(a)) + Self.downloaded(s.report(b))
        #expect(total >= UInt64(s.packBytes) && total < UInt64(s.packBytes) * 3 / 2, "downloaded \(total) for a \(s.packBytes)-byte pack")
    }
}
