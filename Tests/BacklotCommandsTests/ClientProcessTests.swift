import BacklotBasics
import BacklotClient
import BacklotFormat
import BacklotHTTPServer
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
    final class Setup: FetchProcessSetup, @unchecked Sendable {
        let dir: TemporaryDirectory
        let repository: Repository
        let server: HTTPServer
        /// Holds the server's Range answers: the point where a fetch is killed.
        let gate = RangeGate()
        let source: String
        let packBytes: Int
        /// The bytes of big.bin in the first version, and in the second (its second half replaced).
        let original: [UInt8]
        let updatedBig: [UInt8]

        /// A 40 MiB pack (random data: five 8 MiB Range requests) behind a server that delays each Range answer.
        init(delayMicroseconds: UInt32) throws {
            dir = try TemporaryDirectory("fetch-kill")
            repository = try Repository(directory: RepositoryDirectory(path: dir.at("data")))
            try repository.apps.create("a")
            try repository.apps.createPack(app: "a", id: "Big")
            var g = SeededGenerator(seed: 99)
            try dir.write("src/big.bin", g.bytes(40 << 20))
            try dir.write("src/small.txt", g.text(10_000))
            source = dir.at("src")
            let path = try SamplePack.build(
                in: dir, manifestJSON: SamplePack.manifest(id: "Big"), averageChunkSize: 256 << 10)
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            packBytes = bytes.count
            let v = try repository.uploads.createVersion(app: "a", pack: "Big", size: UInt64(bytes.count))
            let upload = try repository.uploads.beginUpload(app: "a", pack: "Big", number: v.number, offset: 0)
            try bytes.withUnsafeBytes { try upload.append($0) }
            try upload.close()
            repository.uploads.waitForProcessing()
            try repository.releases.release(app: "a", pack: "Big", version: 1, channel: .internal)
            // A second version: the second half of big.bin replaced.
            var big = try dir.read("src/big.bin")
            original = big
            big.replaceSubrange((big.count / 2)..., with: g.bytes(big.count - big.count / 2))
            updatedBig = big
            try dir.write("src2/big.bin", big)
            try dir.write("src2/small.txt", try dir.read("src/small.txt"))
            let path2 = try SamplePack.build(
                in: dir, manifestJSON: SamplePack.manifest(id: "Big"), name: "v2.pack", averageChunkSize: 256 << 10,
                sourceRoot: dir.at("src2"))
            let bytes2 = Array(try Data(contentsOf: URL(fileURLWithPath: path2)))
            let v2 = try repository.uploads.createVersion(app: "a", pack: "Big", size: UInt64(bytes2.count))
            let upload2 = try repository.uploads.beginUpload(app: "a", pack: "Big", number: v2.number, offset: 0)
            try bytes2.withUnsafeBytes { try upload2.append($0) }
            try upload2.close()
            repository.uploads.waitForProcessing()
            let tree = try StaticTree(root: repository.directory.publicTreePath)
            let gate = self.gate
            gate.open(delayMicroseconds: delayMicroseconds)
            // A thread per connection: an answer held at the gate holds no other connection's.
            server = try HTTPServer(configuration: .init(port: 0, threads: 0)) { request in
                if request.header("Range") != nil { gate.pass() }
                return .respond(tree.respond(to: request))
            }
        }

        deinit {
            server.stop(grace: 0)
            dir.remove()
        }
    }

    static func downloaded(_ json: String) -> UInt64 {
        guard let r = json.range(of: "\"downloadedBytes\": ") else { return 0 }
        return UInt64(json[r.upperBound...].prefix { $0.isNumber }) ?? 0
    }

    /// Starts a fetch and kills it with SIGKILL between recorded chunks and its install (the
    /// server holds a Range answer meanwhile: ``FetchProcessSetup/fetchKilledMidway``), at a
    /// moment drawn from the seed; checks what it left (the previous release, intact; chunks of
    /// the new one recorded, in a `.partial` folder), restarts it, and checks that the restart
    /// finishes with identical files fetching only what was missing.
    func killAndRestart(
        _ s: Setup, container: String, version: Int, expected: [UInt8], g: inout SeededGenerator, label: String
    ) throws {
        let before = try ClientContainer(path: s.dir.at(container)).installed().first
        // Chunks are recorded about once a delayed round of Range answers (250 ms); an update
        // records the chunks it reuses first. An install is killed after its first or second
        // round (drawn from the seed), an update (half as long) after its first.
        let records = before == nil ? 1 + Int(g.next() % 2) : 2
        let recorded = try s.fetchKilledMidway(
            container: container, gate: s.gate, delay: 250_000, records: records, allowing: Int(g.next() % 2),
            label: label)
        // Never half-installed: the previous release as it was; the new one's chunks kept for the restart.
        let visible = try ClientContainer(path: s.dir.at(container)).installed().first
        #expect(visible?.version == before?.version, "\(label): the kill came after the install")
        #expect(!s.partialReleases(container, pack: "Big").isEmpty, "\(label): no partial release left")
        if let visible {
            let folder = try ClientContainer(path: s.dir.at(container)).releaseFolder("Big", digest: visible.digest)
            #expect(try Array(Data(contentsOf: URL(fileURLWithPath: folder + "/big.bin"))) == s.original, "\(label)")
            #expect(FileSystem.exists(folder + "/small.txt"), "\(label)")
        }
        s.gate.open()  // the restart, undelayed
        let second = try s.fetch(container: container)
        try Wait.untilExit(of: second, "\(label): the restarted fetch ends", timeout: .seconds(300))
        let json = s.report(second)
        #expect(second.terminationStatus == 0, "\(label): \(json)")
        #expect(
            Self.downloaded(json) < UInt64(s.packBytes),
            "\(label): the restart fetched everything again (\(recorded) chunks were recorded): \(json)")
        let installed = try #require(try ClientContainer(path: s.dir.at(container)).installed().first)
        #expect(installed.version == version, "\(label)")
        let folder = try ClientContainer(path: s.dir.at(container)).releaseFolder("Big", digest: installed.digest)
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: folder + "/big.bin"))) == expected, "\(label)")
        #expect(s.partialReleases(container, pack: "Big").isEmpty, "\(label): a partial release is left behind")
    }

    /// Twenty kill -9s at moments drawn from a printed seed: ten during first installs, ten during updates.
    @Test func killedMidInstallOrUpdateTheNextRunFinishesWithIdenticalFilesAndNothingHalfInstalled() throws {
        var g = SeededGenerator.fromEnvironment()
        print("killedMidInstallOrUpdate seed: \(g.seed) (BACKLOT_TEST_SEED replays it)")
        let s = try Setup(delayMicroseconds: 0)
        for round in 0..<10 {
            try killAndRestart(
                s, container: "install-\(round)", version: 1, expected: s.original, g: &g,
                label: "install round \(round)")
        }
        // Ten containers hold version 1; then version 2 is released and each update is interrupted once.
        for round in 0..<10 {
            let p = try s.fetch(container: "update-\(round)")
            try Wait.untilExit(of: p, "the fetch of update-\(round) ends", timeout: .seconds(300))
            #expect(p.terminationStatus == 0, "\(s.report(p))")
        }
        try s.repository.releases.release(app: "a", pack: "Big", version: 2, channel: .internal)
        for round in 0..<10 {
            try killAndRestart(
                s, container: "update-\(round)", version: 2, expected: s.updatedBig, g: &g,
                label: "update round \(round)")
        }
    }

    @Test func twoProcessesOnOneContainerDownloadOnce() throws {
        let s = try Setup(delayMicroseconds: 50_000)
        let a = try s.fetch(container: "shared")
        let b = try s.fetch(container: "shared")
        try Wait.untilExit(of: a, "the first fetch ends", timeout: .seconds(300))
        try Wait.untilExit(of: b, "the second fetch ends", timeout: .seconds(300))
        #expect(a.terminationStatus == 0 && b.terminationStatus == 0, "\(s.report(a)) \(s.report(b))")
        let total = Self.downloaded(s.report(a)) + Self.downloaded(s.report(b))
        #expect(
            total >= UInt64(s.packBytes) && total < UInt64(s.packBytes) * 3 / 2,
            "downloaded \(total) for a \(s.packBytes)-byte pack")
        // The process that found the executor busy queued its request and got exactly one event for it.
        let db = try Database(path: s.dir.at("shared") + "/state.sqlite")
        let events = try db.read { try $0.query("SELECT kind, delivered FROM events") }
        #expect(
            events.count == 1 && events.first?["kind"]?.string == "finished" && events.first?["delivered"]?.int == 1,
            "\(events)")
        #expect(try db.read { try $0.query("SELECT COUNT(*) AS n FROM requests") }.first?["n"]?.int == 0)
    }
}
