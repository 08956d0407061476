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

/// `backlot fetch` killed with SIGKILL while it updates through a delta (docs/format.md §14): the
/// restart finishes with identical files, and nothing half-installed is ever visible.
@Suite(.serialized) struct DeltaKillTests {
    final class Setup: FetchProcessSetup, @unchecked Sendable {
        let dir: TemporaryDirectory
        let repository: Repository
        let server: HTTPServer
        /// Holds the server's Range answers: the point where a fetch is killed.
        let gate = RangeGate()
        let updated: [UInt8]

        /// A 40 MiB file in 64 KiB chunks; version 2 overwrites 24 KiB of every 64 KiB, so every
        /// chunk changes and the delta (about 15 MiB) takes several Range runs.
        init() throws {
            dir = try TemporaryDirectory("delta-kill")
            repository = try Repository(directory: RepositoryDirectory(path: dir.at("data")))
            try repository.apps.create("a")
            try repository.apps.createPack(app: "a", id: "Big")
            var g = SeededGenerator(seed: 1530)
            var big = g.bytes(40 << 20)
            try dir.write("src/big.bin", big)
            try Self.publish(repository, dir, in: "src", name: "v1.pack")
            for at in stride(from: 20_000, to: big.count - (24 << 10), by: 64 << 10) {
                big.replaceSubrange(at..<at + (24 << 10), with: g.bytes(24 << 10))
            }
            updated = big
            try dir.write("src2/big.bin", big)
            try Self.publish(repository, dir, in: "src2", name: "v2.pack")
            try repository.releases.release(app: "a", pack: "Big", version: 1, channel: .internal)
            let tree = try StaticTree(root: repository.directory.publicTreePath)
            let gate = self.gate
            // A thread per connection: an answer held at the gate holds no other connection's.
            server = try HTTPServer(configuration: .init(port: 0, threads: 0)) { request in
                if request.header("Range") != nil { gate.pass() }
                return .respond(tree.respond(to: request))
            }
        }

        private static func publish(
            _ repository: Repository, _ dir: TemporaryDirectory, in source: String, name: String
        ) throws {
            let path = try SamplePack.build(
                in: dir, manifestJSON: SamplePack.manifest(id: "Big"), name: name, averageChunkSize: 64 << 10,
                sourceRoot: dir.at(source))
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            _ = try repository.uploads.uploadAndProcess(app: "a", pack: "Big", bytes: bytes)
        }

        deinit {
            server.stop(grace: 0)
            dir.remove()
        }
    }

    static func number(_ json: String, _ key: String) -> UInt64 {
        guard let r = json.range(of: "\"\(key)\": ") else { return 0 }
        return UInt64(json[r.upperBound...].prefix { $0.isNumber }) ?? 0
    }

    /// Four updates killed between recorded chunks of the delta and the install (the server holds
    /// a Range answer meanwhile), after the first or second delta run recorded (drawn from the
    /// seed): version 1 stays visible and intact, the restart goes on with the delta (fetching less
    /// of it than an update left alone) and installs version 2 with identical files.
    @Test func killedMidDeltaUpdateTheRestartFinishesWithIdenticalFiles() throws {
        var g = SeededGenerator.fromEnvironment()
        print("killedMidDeltaUpdate seed: \(g.seed) (BACKLOT_TEST_SEED replays it)")
        let s = try Setup()
        let original = try s.dir.read("src/big.bin")
        for round in 0...4 {
            let p = try s.fetch(container: "c\(round)")
            try Wait.untilExit(of: p, "the first install into c\(round) ends", timeout: .seconds(300))
            #expect(p.terminationStatus == 0, "\(s.report(p))")
        }
        try s.repository.releases.release(app: "a", pack: "Big", version: 2, channel: .internal)
        // An update left alone: what a restarted one may fetch whole at most (chunks the delta does
        // not rebuild), and the delta bytes it reads.
        let calm = try s.fetch(container: "c4")
        try Wait.untilExit(of: calm, "the update of c4 ends", timeout: .seconds(300))
        let calmJSON = s.report(calm)
        #expect(calm.terminationStatus == 0 && Self.number(calmJSON, "deltaChunkCount") > 0, "\(calmJSON)")
        let wholeChunks = Self.number(calmJSON, "downloadedChunkCount")
        let calmDeltaBytes = Self.number(calmJSON, "deltaBytes")
        // Chunks an update reuses from version 1 are recorded before anything is downloaded.
        let reuseRecord = Self.number(calmJSON, "reusedChunkCount") > 0 ? 1 : 0
        for round in 0..<4 {
            let container = "c\(round)"
            let label = "round \(round)"
            _ = try s.fetchKilledMidway(
                container: container, gate: s.gate, delay: 200_000, records: reuseRecord + 1 + Int(g.next() % 2),
                allowing: Int(g.next() % 2), label: label)
            // Never half-installed: version 1 as it was, version 2's chunks kept for the restart.
            let c = try ClientContainer(path: s.dir.at(container))
            let visible = try #require(try c.installed().first)
            let folder = c.releaseFolder("Big", digest: visible.digest)
            let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: folder + "/big.bin")))
            #expect(visible.version == 1 && bytes == original, "\(label): the kill came after the install")
            #expect(!s.partialReleases(container, pack: "Big").isEmpty, "\(label): no partial release left")
            let second = try s.fetch(container: container)
            try Wait.untilExit(of: second, "\(label): the restarted update ends", timeout: .seconds(300))
            let json = s.report(second)
            #expect(second.terminationStatus == 0, "\(label): \(json)")
            // The restart goes on with the delta, from where the kill left it.
            #expect(Self.number(json, "deltaBytes") > 0, "\(label): the restart goes on with the delta: \(json)")
            #expect(
                Self.number(json, "deltaBytes") < calmDeltaBytes,
                "\(label): the restart read the whole delta again (\(calmDeltaBytes) bytes): \(json)")
            #expect(Self.number(json, "downloadedChunkCount") <= wholeChunks, "\(label): \(json)")
            let installed = try #require(try c.installed().first)
            #expect(installed.version == 2, "\(label)")
            #expect(
                try Array(
                    Data(
                        contentsOf: URL(fileURLWithPath: c.releaseFolder("Big", digest: installed.digest) + "/big.bin"))
                )
                    == s.updated, "\(label)")
            #expect(s.partialReleases(container, pack: "Big").isEmpty, "\(label): a partial release is left behind")
        }
    }
}
