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
        let lanes = RangeLanes(count: 40, lanes: 4)
        #expect((0..<4).map { lanes.next(for: $0) } == [0, 10, 20, 30])
        #expect(lanes.next(for: 0) == 1)
        #expect(lanes.next(for: 2) == 21)
        #expect(lanes.remaining == 34)
    }

    @Test func anEmptyLaneTakesTheBackHalfOfTheFullestAndWalksItForward() {
        let lanes = RangeLanes(count: 8, lanes: 2)  // 0..<4 and 4..<8
        #expect((0..<4).map { _ in lanes.next(for: 0) } == [0, 1, 2, 3])
        // Lane 1 is untouched: lane 0 takes 6..<8, its owner keeps 4..<6.
        #expect(lanes.next(for: 0) == 6)
        #expect(lanes.next(for: 1) == 4)
        #expect(lanes.next(for: 0) == 7)
        #expect(lanes.next(for: 1) == 5)
        #expect(lanes.next(for: 0) == nil)
        #expect(lanes.next(for: 1) == nil)
    }

    @Test(arguments: [(0, 4), (1, 4), (3, 4), (97, 4), (1000, 7), (5, 1)])
    func everyIndexIsHandedOutOnceWhateverTheThreads(_ count: Int, _ threads: Int) {
        let lanes = RangeLanes(count: count, lanes: threads)
        let taken = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: threads) { lane in
            while let i = lanes.next(for: lane) { taken.withLock { $0.append(i) } }
        }
        #expect(taken.withLock { $0.sorted() } == Array(0..<count))
        #expect(lanes.next(for: 0) == nil)
        #expect(lanes.next(for: threads) == nil)  // no such lane
    }

    /// An install's first requests (one per connection, held at the server until all four are in
    /// flight) start at the fronts of four lanes of its runs, not at four neighbouring runs; the
    /// install then completes with every run asked once.
    @Test func anInstallsRequestsInFlightAskForDistantParts() async throws {
        let f = try ClientFixture()
        try f.publish()
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
        // With 6 runs or more, four lanes' fronts are not the first four runs (7 here: 0, 1, 3, 5).
        try #require(runs.count >= connections + 2, "the fixture's pack makes \(runs.count) runs: too few to tell")
        let laneFronts = (0..<connections).map { runs[runs.count * $0 / connections] }
        #expect(Set(starts.prefix(connections)) == Set(laneFronts), "first requests \(starts.prefix(connections)), runs \(runs)")
    }
}
