import BacklotAgent
import BacklotBasics
import BacklotContainer
import BacklotExtension
import BacklotStore
import BacklotTestSupport
import Foundation
import Testing

/// The typed stores of the container's databases, on their own: what one process writes, another
/// reads back; what a transaction throws leaves nothing; rows of a shape no version writes are skipped.
@Suite struct ContainerStoreTests {
    @Test func theAgentStoreKnowsEveryContentRequestByName() {
        #expect(AgentStore.requestNames == Set(ContentRequest.allCases.map(\.name)))
    }

    @Test func anEventWithAnUnknownRequestIsRefusedAndAStoredOneIsSkipped() throws {
        let dir = try TemporaryDirectory("agent-store")
        defer { dir.remove() }
        let store = try AgentStore(containerPath: dir.path)
        #expect(throws: BacklotError.self) { try store.enqueue(requestNamed: "reboot", bypassBudget: false) }
        let seq = try store.enqueue(.update, bypassBudget: true)
        let db = try Database(path: ContainerLayout(root: dir.path).agentDatabase)
        try db.transaction { tx in
            _ = try tx.run("INSERT INTO agent_events(request, bypass, created) VALUES ('reboot', 0, 0)")
        }
        #expect(try store.queued().map(\.seq) == [seq])
        #expect(try store.queued().first?.request == .update)
    }

    @Test func urlDownloadOutcomesMoveOnlyFromTheStatesNamed() throws {
        let dir = try TemporaryDirectory("state-store")
        defer { dir.remove() }
        let layout = ContainerLayout(root: dir.path)
        let store = try StateStore(layout: layout)
        let d = URLDownloadRecord(
            identifier: "a", url: "https://example.com/a", fileSize: 10, essential: true, priority: 5)
        try store.transaction { tx in try tx.scheduleURLDownload(d, created: 1) }
        #expect(throws: BacklotError.self) {
            try store.transaction { tx in try tx.scheduleURLDownload(d, created: 2) }
        }
        #expect(try store.read { try $0.scheduledURLDownloads() } == [d])
        #expect(try store.read { try $0.reservedURLDownloadSizes(essential: true, excluding: nil) } == [10])
        #expect(try store.read { try $0.reservedURLDownloadSizes(essential: true, excluding: "a") } == [])

        // Retiring it and recording its outcome is one transaction: a throw leaves it scheduled.
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try store.transaction { tx in
                #expect(try tx.unscheduleURLDownload("a"))
                _ = try tx.recordURLOutcome(
                    d, kind: "finished", path: "/p", staged: "/s", message: nil, code: nil, state: .recorded,
                    owner: "agent")
                throw Stop()
            }
        }
        #expect(try store.read { try $0.scheduledURLDownloads() }.count == 1)
        #expect(try store.read { try $0.urlOutcomes(in: .recorded) }.isEmpty)

        let seq = try store.transaction { tx in
            _ = try tx.unscheduleURLDownload("a")
            return try tx.recordURLOutcome(
                d, kind: "finished", path: "/p", staged: "/s", message: nil, code: nil, state: .recorded,
                owner: "agent")
        }
        #expect(try store.read { try $0.stagedURLOutcomes(of: "a") }.map(\.seq) == [seq])
        try store.transaction { tx in try tx.clearStaging(seq) }
        #expect(try store.read { try $0.stagedURLOutcomes(of: "a") }.isEmpty)
        #expect(try store.read { try $0.urlOutcomes(in: .recorded, recordedBy: "app") }.isEmpty)
        // Only from the states named: a recorded outcome is not "taken by the extension".
        #expect(try !store.transaction { tx in try tx.moveURLOutcome(seq, to: .done, from: [.takenByExtension]) })
        #expect(try store.transaction { tx in try tx.moveURLOutcome(seq, to: .forApp, from: [.recorded]) })
        let claimed = try store.transaction { tx in try tx.claimOldestURLOutcome(in: .forApp, movingTo: .done) }
        #expect(claimed?.seq == seq && claimed?.download == d && claimed?.path == "/p")
        #expect(try store.transaction { tx in try tx.claimOldestURLOutcome(in: .forApp, movingTo: .done) } == nil)
        #expect(try store.read { try $0.urlOutcome(seq) }?.state == .done)
    }

    @Test func pausesAndInstalledReleasesRoundTrip() throws {
        let dir = try TemporaryDirectory("state-store")
        defer { dir.remove() }
        let store = try StateStore(layout: ContainerLayout(root: dir.path))
        try store.transaction { tx in try tx.pauseURLDownload("a", attempts: 3, retryAfter: 100) }
        #expect(try store.read { try $0.pauseCount("a") } == 3)
        #expect(try store.read { try $0.pausedURLDownloads(retryingAfter: 99) } == ["a"])
        #expect(try store.read { try $0.pausedURLDownloads(retryingAfter: 100) } == [])
        try store.transaction { tx in try tx.clearPauses("a") }
        #expect(try store.read { try $0.pauseCount("a") } == 0)

        let release = InstalledRelease(
            id: "Levels", version: 2, digest: "d2", downloadSize: 9, metadata: "{}", indexBytes: [1, 2],
            installedAt: 7)
        try store.transaction { tx in try tx.recordDoneChunks("d2", [0, 3]) }
        #expect(Set(try store.read { try $0.doneChunks("d2") }) == [0, 3])
        try store.transaction { tx in try tx.recordInstalled(release) }
        #expect(try store.read { try $0.installedRelease("Levels") } == release)
        #expect(try store.read { try $0.doneChunks("d2") }.isEmpty, "an installed release has no chunks to resume")
        try store.transaction { tx in try tx.deleteInstalled("Levels") }
        #expect(try store.read { try $0.installedReleases() }.isEmpty)
    }

    @Test func aTaskRequestOverItsLimitIsRefusedInTheSameTransaction() throws {
        let dir = try TemporaryDirectory("task-store")
        defer { dir.remove() }
        let store = try TaskRecordStore(layout: ContainerLayout(root: dir.path))
        func request(_ id: String) -> TaskRecordStore.Request {
            .init(
                identifier: id, kind: "refresh", earliest: nil, requiresNetwork: false, requiresPower: false,
                submitted: 1)
        }
        #expect(try store.submit(request("a"), limit: 1))
        #expect(try !store.submit(request("b"), limit: 1))
        #expect(try store.submit(request("a"), limit: 1), "resubmitting its identifier replaces it")
        #expect(try store.pending().map(\.identifier) == ["a"])
        #expect(try store.claim("a", submittedBefore: 1) == nil)
        #expect(try store.claim("a")?.identifier == "a")
        #expect(try store.claim("a") == nil, "claimed once")
        for i in 0..<5 {
            try store.record(
                .init(
                    identifier: "a", kind: "refresh", started: Double(i), ended: Double(i), outcome: "success",
                    endedUptime: nil, boot: nil), keep: 3)
        }
        #expect(try store.runs("a", last: 10).map(\.started) == [2, 3, 4])
    }
}
