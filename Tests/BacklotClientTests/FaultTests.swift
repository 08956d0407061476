import BacklotBasics
import BacklotClient
import BacklotCrypto
import BacklotHTTPServer
import BacklotRepository
import BacklotServer
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A server that misbehaves on Range requests for archives, and damaged installed files.
@Suite(.serialized) struct FaultTests {
    enum Fault: Sendable { case error500, truncated, stall, endless, flaky, slow, tamperedIndex, cutShortThrice }

    /// Serves the fixture's tree, with `fault` applied to Range requests for packs.
    /// Opened by the cancellation test once it has cancelled: the slow server holds Range answers until then.
    static let gate = Atomic<Bool>(false)
    /// Set by the server of ``Fault/tamperedIndex`` once it has changed the client's kept index.
    static let tampered = Atomic<Bool>(false)

    /// What the flaky server saw: for each range, when it answered 503 and when the range was asked again.
    final class RetryLog: Sendable {
        struct Range: Sendable {
            var refusedAt: ContinuousClock.Instant
            var askedAgainAt: ContinuousClock.Instant?
        }
        let ranges = Mutex<[String: Range]>([:])

        /// Every range asked of the ``Fault/cutShortThrice`` server, in order.
        let asked = Mutex<[String]>([])

        /// Logs `range` (a range of chunks); whether its answer is to be cut short (the first three).
        func cut(_ range: String) -> Bool {
            asked.withLock { all in
                all.append(range)
                return all.count <= 3
            }
        }

        /// Whether this request for `range` is the first (to be refused); records when.
        func firstAsk(_ range: String) -> Bool {
            let now = ContinuousClock.now
            return ranges.withLock { all in
                if all[range] == nil {
                    all[range] = Range(refusedAt: now)
                    return true
                }
                if all[range]!.askedAgainAt == nil { all[range]!.askedAgainAt = now }
                return false
            }
        }
    }

    static let retryAfterSeconds = 1

    /// The files under `container`'s packs/ that hold an install's header and index until its commit.
    static func pendingIndexFiles(_ container: String) -> [String] {
        let packs = container + "/packs"
        return (FileManager.default.subpaths(atPath: packs) ?? []).filter { $0.hasSuffix(".index.partial") }
            .map { packs + "/" + $0 }
    }

    func faultyServer(
        _ f: ClientFixture, _ fault: Fault, retryLog: RetryLog = RetryLog()
    ) throws -> (HTTPServer, AssetPackManager) {
        let tree = try StaticTree(root: f.repository.directory.publicTreePath)
        let server = try HTTPServer(configuration: .init(port: 0)) { request in
            guard request.path.hasPrefix("/v1/packs/"), let range = request.header("Range"),
                !range.hasPrefix("bytes=0-63")
            else {
                return .respond(tree.respond(to: request))
            }
            var r = tree.respond(to: request)
            switch fault {
            case .error500:
                return .respond(.error(500, code: .internal, "broken"))
            case .flaky:
                // Fails the first time each range is asked, with Retry-After: the retry succeeds.
                guard retryLog.firstAsk(range) else { return .respond(r) }
                return .respond(
                    HTTPResponse(
                        status: 503, headers: [("Retry-After", String(FaultTests.retryAfterSeconds))], route: "static"))
            case .truncated, .endless:
                guard case .descriptor(let fd, let offset, let length) = r.body else {
                    Issue.record("a pack's range was not answered from its file: the fault was not made")
                    return .respond(r)
                }
                r.body = .descriptor(fd, offset: offset, length: fault == .truncated ? length / 2 : length + 4096)
                r.headers.removeAll { $0.name == "Content-Range" }
                return .respond(r)
            case .stall:
                usleep(2_500_000)
                return .respond(r)
            case .cutShortThrice:
                // The first three answers for chunks stop halfway (a connection that broke); the
                // index, which ends the pack, is left whole. Every range asked is logged.
                let total = r.headers.first { $0.name == "Content-Range" }?.value.split(separator: "/").last
                let end = range.split(separator: "-").last
                let ofChunks = total != nil && end != nil && UInt64(end!).map { $0 + 1 } != UInt64(total!)
                guard ofChunks, retryLog.cut(range), case .descriptor(let fd, let offset, let length) = r.body else {
                    return .respond(r)
                }
                r.body = .descriptor(fd, offset: offset, length: length / 2)
                r.headers.removeAll { $0.name == "Content-Range" }
                return .respond(r)
            case .tamperedIndex:
                // Once the client has written the index it keeps for the commit (it asks for chunks
                // after that), a byte of that file is changed, once.
                let container = f.dir.at("c-\(fault)")
                if let kept = FaultTests.pendingIndexFiles(container).first,
                    FaultTests.tampered.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
                {
                    var bytes = Array((try? Data(contentsOf: URL(fileURLWithPath: kept))) ?? Data())
                    if !bytes.isEmpty { bytes[bytes.count - 1] ^= 0xFF }
                    try? Data(bytes).write(to: URL(fileURLWithPath: kept))
                }
                return .respond(r)
            case .slow:
                // 30 s at most: the client's stall timeout (then the test fails, its cancel never came).
                _ = Wait.holds(within: .seconds(30)) { FaultTests.gate.load(ordering: .relaxed) }
                return .respond(r)
            }
        }
        var configuration = AssetPackManager.Configuration(
            containerPath: f.dir.at("c-\(fault)"),
            catalogURL: URL(string: "http://127.0.0.1:\(server.port)/v1/apps/\(f.app)/internal/catalog.json")!,
            app: f.app, channel: .internal, trustedKeys: [f.pinned])
        // A second's stall only where the fault is to fail the fetch (so that it fails quickly); an
        // install that must succeed, or end by its cancel, is never cut short by a loaded machine.
        configuration.stallTimeout = [.error500, .truncated, .stall, .endless].contains(fault) ? 1 : 30
        configuration.retries = fault == .flaky ? 2 : fault == .cutShortThrice ? 4 : 1
        return (server, try AssetPackManager(configuration: configuration))
    }

    @Test(arguments: [Fault.error500, .truncated, .stall, .endless])
    func aMisbehavingServerFailsTheDownloadAndInstallsNothing(_ fault: Fault) async throws {
        let f = try ClientFixture()
        try f.publish()
        let (server, manager) = try faultyServer(f, fault)
        defer { server.stop(grace: 0) }
        await #expect(throws: (any Error).self) { _ = try await manager.fetch(packWithID: "Levels") }
        #expect(!manager.assetPackIsAvailableLocally(withID: "Levels"))
    }

    /// `cancel()` on the `Progress` of `.downloading` cancels the download; nothing is installed.
    @Test func cancellingTheProgressCancelsTheDownload() async throws {
        let f = try ClientFixture()
        try f.publish(chunkSize: 4 << 10)
        FaultTests.gate.store(false, ordering: .relaxed)
        let (server, manager) = try faultyServer(f, .slow)
        defer { server.stop(grace: 0) }
        let updates = manager.statusUpdates(forAssetPackWithID: "Levels")
        let watcher = Task {
            for await update in updates {
                if case .downloading(_, let progress) = update {
                    progress.cancel()
                    FaultTests.gate.store(true, ordering: .relaxed)
                }
            }
        }
        await #expect { _ = try await manager.fetch(packWithID: "Levels") } throws: {
            ($0 as? BacklotError)?.code == .cancelled
        }
        watcher.cancel()
        #expect(!manager.assetPackIsAvailableLocally(withID: "Levels"))
    }

    /// Every range is refused once with 503 and `Retry-After: 1`: the client asks it again, and
    /// never sooner than a second later (the server's clock: from its 503 to the next request of
    /// that range, which is the client's wait plus a loopback round trip). Without Retry-After it
    /// would retry after its own back-off of 100–300 ms.
    @Test func retryAfterIsHonoured() async throws {
        let f = try ClientFixture()
        try f.publish()
        let log = RetryLog()
        let (server, manager) = try faultyServer(f, .flaky, retryLog: log)
        defer { server.stop(grace: 0) }
        let started = ContinuousClock.now
        #expect(try await manager.fetch(packWithID: "Levels").version == 1)
        let elapsed = ContinuousClock.now - started
        let ranges = log.ranges.withLock { $0 }
        let wanted = Duration.seconds(Self.retryAfterSeconds)
        #expect(!ranges.isEmpty, "no range was refused: the fault never applied")
        for (range, seen) in ranges.sorted(by: { $0.key < $1.key }) {
            let again = try #require(seen.askedAgainAt, "\(range) was refused and never asked again")
            #expect(again - seen.refusedAt >= wanted, "\(range) was asked again after \(again - seen.refusedAt)")
        }
        #expect(elapsed >= wanted, "the fetch took \(elapsed)")
    }

    /// Range answers that stop halfway are asked again from the first chunk not yet written (the
    /// chunks of a run are decoded and written as they arrive): the install completes with every
    /// file intact, and a later request for a run ends where an earlier one did but starts after it.
    @Test func aRangeCutShortResumesAtTheFirstChunkNotWritten() async throws {
        let f = try ClientFixture()
        try f.publish(chunkSize: 4 << 10)
        let log = RetryLog()
        let (server, manager) = try faultyServer(f, .cutShortThrice, retryLog: log)
        defer { server.stop(grace: 0) }
        #expect(try await manager.fetch(packWithID: "Levels").version == 1)
        #expect(try manager.verifyInstalled().isEmpty)
        let asked = log.asked.withLock { $0 }.compactMap { range -> (start: UInt64, end: UInt64)? in
            let bounds = range.dropFirst("bytes=".count).split(separator: "-").compactMap { UInt64($0) }
            return bounds.count == 2 ? (bounds[0], bounds[1]) : nil
        }
        let resumed = asked.indices.contains { later in
            asked[..<later].contains { $0.end == asked[later].end && $0.start < asked[later].start }
        }
        #expect(resumed, "no range was asked again from where a cut answer stopped: \(asked)")
    }

    /// The header and index an install keeps on disk until its commit (not in memory: 12 MB at
    /// 200,000 files) are checked against the catalog again when read back: changed meanwhile, the
    /// release is not made visible. The next install writes them anew, and no such file is left.
    @Test func anIndexChangedDuringTheInstallIsRefusedAtTheCommit() async throws {
        let f = try ClientFixture()
        try f.publish(chunkSize: 4 << 10)
        FaultTests.tampered.store(false, ordering: .relaxed)
        let (server, manager) = try faultyServer(f, .tamperedIndex)
        defer { server.stop(grace: 0) }
        await #expect { _ = try await manager.fetch(packWithID: "Levels") } throws: {
            ($0 as? BacklotError)?.code == .corruptArchive
        }
        let tampered = FaultTests.tampered.load(ordering: .relaxed)
        #expect(tampered, "the kept index was never there to change")
        #expect(!manager.assetPackIsAvailableLocally(withID: "Levels"))
        #expect(try await manager.fetch(packWithID: "Levels").version == 1)
        #expect(try manager.verifyInstalled().isEmpty)
        #expect(FaultTests.pendingIndexFiles(f.dir.at("c-\(Fault.tamperedIndex)")).isEmpty)
    }

    @Test func damagedInstalledFilesAreFoundAndRepairedFetchingLittle() async throws {
        let f = try ClientFixture()
        let (source, _) = try f.publish()
        let manager = try f.manager()
        _ = try await manager.fetch(packWithID: "Levels")
        #expect(try manager.verifyInstalled().isEmpty)
        let damaged = manager.url(for: "Levels/level1.dat").path
        chmod(damaged, 0o644)
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: damaged)))
        bytes[5000] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: damaged))
        #expect(try manager.verifyInstalled() == ["Levels: Levels/level1.dat"])
        #expect(try await manager.repair() == ["Levels"])
        #expect(try manager.verifyInstalled().isEmpty)
        #expect(try sameFiles(source, manager.url(for: "readme.txt").deletingLastPathComponent().path))
    }
}
