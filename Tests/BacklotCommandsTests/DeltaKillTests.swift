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
        let updated: [UInt8]

        /// A 40 MiB file in 64 KiB chunks; version 2 overwrites 24 KiB of every 64 KiB, so every
        /// chunk changes and the delta (about 15 MiB) takes several Range runs, each answered after a delay.
        init(delayMicroseconds: UInt32) throws {
            dir = try TemporaryDirectory("delta-kill")
            repository = try Repository(directory: RepositoryDirectory(path: dir.at("data")))
            try repository.createApp("a")
            try repository.createPack(app: "a", id: "Big")
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
            try repository.release(app: "a", pack: "Big", version: 1, channel: .internal)
            let tree = try StaticTree(root: repository.directory.publicTreePath)
            server = try HTTPServer(configuration: .init(port: 0)) { request in
                if request.header("Range") != nil { usleep(delayMicroseconds) }
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
            _ = try repository.uploadAndProcess(app: "a", pack: "Big", bytes: bytes)
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

    @Test func killedMidDeltaUpdateTheRestartFinishesWithIdenticalFiles() throws {
        var g = SeededGenerator.fromEnvironment()
        print("killedMidDeltaUpdate seed: \(g.seed) (BACKLOT_TEST_SEED replays it)")
        let s = try Setup(delayMicroseconds: 200_000)
        let original = try s.dir.read("src/big.bin")
        for round in 0...4 {
            let p = try s.fetch(container: "c\(round)")
            p.waitUntilExit()
            #expect(p.terminationStatus == 0, "\(s.report(p))")
        }
        try s.repository.release(app: "a", pack: "Big", version: 2, channel: .internal)
        // An update left alone: what a restarted one may fetch whole at most (chunks the delta does not rebuild).
        let calm = try s.fetch(container: "c4")
        calm.waitUntilExit()
        let calmJSON = s.report(calm)
        #expect(calm.terminationStatus == 0 && Self.number(calmJSON, "deltaChunkCount") > 0, "\(calmJSON)")
        let wholeChunks = Self.number(calmJSON, "downloadedChunkCount")
        var killedMidway = 0
        for round in 0..<4 {
            let container = "c\(round)"
            let doneBefore = s.doneChunks(container)
            let first = try s.fetch(container: container)
            for _ in 0..<1000 where first.isRunning && s.doneChunks(container) == doneBefore { usleep(5_000) }
            usleep(useconds_t(g.next() % 300_000))
            let wasRunning = first.isRunning
            kill(first.processIdentifier, SIGKILL)
            first.waitUntilExit()
            let c = try ClientContainer(path: s.dir.at(container))
            let visible = try #require(try c.installed().first)
            let folder = c.releaseFolder("Big", digest: visible.digest)
            let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: folder + "/big.bin")))
            // Never half-installed: version 1 as it was, or version 2 complete.
            #expect(
                (visible.version == 1 && bytes == original) || (visible.version == 2 && bytes == s.updated),
                "round \(round)")
            let second = try s.fetch(container: container)
            second.waitUntilExit()
            let json = s.report(second)
            #expect(second.terminationStatus == 0, "round \(round): \(json)")
            if wasRunning && visible.version == 1 {
                killedMidway += 1
                #expect(
                    Self.number(json, "deltaBytes") > 0, "round \(round): the restart goes on with the delta: \(json)")
                #expect(Self.number(json, "downloadedChunkCount") <= wholeChunks, "round \(round): \(json)")
            }
            let installed = try #require(try c.installed().first)
            #expect(installed.version == 2, "round \(round)")
            #expect(
                try Array(
                    Data(
                        contentsOf: URL(fileURLWithPath: c.releaseFolder("Big", digest: installed.digest) + "/big.bin"))
                )
                    == s.updated, "round \(round)")
        }
        print("killedMidDeltaUpdate: \(killedMidway) of 4 kills landed during the update")
    }
}
