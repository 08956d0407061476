import BacklotBasics
import BacklotFormat
import BacklotHTTPServer
import BacklotServer
import BacklotTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import BacklotClient

/// The runs of one download go to its connections as lanes: the requests in flight at once ask for
/// distant parts of the file (a slicing edge never holds one behind another), and nothing is
/// fetched twice or left out.
@Suite(.serialized) struct RangeLanesTests {
    @Test func eachConnectionStartsAtTheFrontOfItsOwnLane() {
        let lanes = RangeLanes(count: 40, connections: 4)
        #expect(lanes.count == 4)
        #expect((0..<4).map { lanes.next(for: $0) } == [0, 10, 20, 30])
        #expect(lanes.next(for: 0) == 1)
        #expect(lanes.next(for: 2) == 21)
        #expect(lanes.remaining == 34)
    }

    @Test func fewRunsMakeFewerLanesOfTwoRunsAtLeast() {
        #expect(
            [0, 1, 2, 3, 5, 7, 8, 100].map { RangeLanes(count: $0, connections: 4).count } == [1, 1, 1, 1, 2, 3, 4, 4])
        let lanes = RangeLanes(count: 5, connections: 4)  // 0..<2 and 2..<5
        #expect([lanes.next(for: 0), lanes.next(for: 1)] == [0, 2])
    }

    @Test func anEmptyLaneTakesTheBackHalfOfTheFullestAndWalksItForward() {
        let lanes = RangeLanes(count: 8, connections: 2)  // 0..<4 and 4..<8
        #expect((0..<4).map { _ in lanes.next(for: 0) } == [0, 1, 2, 3])
        // Lane 1 is untouched: lane 0 takes 6..<8, its owner keeps 4..<6.
        #expect(lanes.next(for: 0) == 6)
        #expect(lanes.next(for: 1) == 4)
        #expect(lanes.next(for: 0) == 7)
        #expect(lanes.next(for: 1) == 5)
        #expect(lanes.next(for: 0) == nil)
        #expect(lanes.next(for: 1) == nil)
    }

    /// Taking half of a lane with three runs left would start next to the run its owner is
    /// fetching (a slice both need): the idle connection stops instead.
    @Test func aLaneWithFewRunsLeftIsLeftToItsOwner() {
        let lanes = RangeLanes(count: 8, connections: 2)  // 0..<4 and 4..<8
        #expect(lanes.next(for: 1) == 4)  // 5..<8 left: three
        #expect((0..<4).map { _ in lanes.next(for: 0) } == [0, 1, 2, 3])
        #expect(lanes.next(for: 0) == nil)
        #expect((0..<3).map { _ in lanes.next(for: 1) } == [5, 6, 7])
        #expect(lanes.remaining == 0)
    }

    @Test(arguments: [(0, 4), (1, 4), (3, 4), (97, 4), (1000, 7), (5, 1)])
    func everyIndexIsHandedOutOnceWhateverTheThreads(_ count: Int, _ threads: Int) {
        let lanes = RangeLanes(count: count, connections: threads)
        let taken = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: lanes.count) { lane in
            while let i = lanes.next(for: lane) { taken.withLock { $0.append(i) } }
        }
        #expect(taken.withLock { $0.sorted() } == Array(0..<count))
        #expect(lanes.next(for: 0) == nil)
        #expect(lanes.next(for: lanes.count) == nil)  // no such lane
    }

    /// An install's first requests (one per connection, held at the server until all four are in
    /// flight) start at the fronts of four lanes of its runs, not at four neighbouring runs; the
    /// install then completes with every run asked once.
    @Test func anInstallsRequestsInFlightAskForDistantParts() async throws {
        let f = try ClientFixture()
        // 1 MiB of random bytes: 16 runs of 64 KiB at most, four lanes of four.
        try f.publish { src in
            var g = SeededGenerator(seed: 7)
            try src.write("src/data.bin", g.bytes(1 << 20))
        }
        let archive = try PackReader(path: try f.archivePath())
        // The chunks' bytes: not the header (before them) nor the index (after them).
        let chunkBytes = try #require(archive.index.chunks.map(\.offset).min())..<archive.header.indexOffset
        let tree = try StaticTree(root: f.repository.directory.publicTreePath)
        let connections = 4  // the installer's requests in flight (PackInstaller.connections)
        let seen = Mutex<(starts: [UInt64], held: Int)>(([], 0))
        // Thread per connection: a held answer must not hold the others.
        let server = try HTTPServer(configuration: .init(port: 0, threads: 0)) { request in
            guard request.path.hasPrefix("/v1/packs/"), let range = request.header("Range"),
                let start = range.dropFirst("bytes=".count).split(separator: "-").first.flatMap({ UInt64($0) }),
                chunkBytes.contains(start)
            else { return .respond(tree.respond(to: request)) }
            let held = seen.withLock { s -> Int in
                s.starts.append(start)
                s.held += 1
                return s.held
            }
            if held <= connections {
                _ = Wait.holds(within: .seconds(30)) { seen.withLock { $0.held >= connections } }
            }
            return .respond(tree.respond(to: request))
        }
        defer { server.stop(grace: 0) }
        var configuration = AssetPackManager.Configuration(
            containerPath: f.dir.at("lanes"),
            catalogURL: URL(string: "http://127.0.0.1:\(server.port)/v1/apps/\(f.app)/internal/catalog.json")!,
            app: f.app, channel: .internal, trustedKeys: [f.pinned])
        configuration.maximumRangeBytes = 64 << 10
        let manager = try AssetPackManager(configuration: configuration)
        #expect(try await manager.fetch(packWithID: "Levels").version == 1)

        let starts = seen.withLock { $0.starts }
        let runs = starts.sorted()
        #expect(Set(runs).count == runs.count, "a run was asked twice: \(starts)")
        try #require(runs.count >= 2 * connections, "the pack makes \(runs.count) runs: too few for four lanes")
        let laneFronts = (0..<connections).map { runs[runs.count * $0 / connections] }
        #expect(
            Set(starts.prefix(connections)) == Set(laneFronts),
            "first requests \(starts.prefix(connections)), runs \(runs)")
    }
}
