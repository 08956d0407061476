import BacklotAgent
import BacklotBasics
import BacklotClient
import BacklotContainer
import BacklotStore
import BacklotTaskScheduler
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

/// A container made by the Backlot of 2026-12-01 (before schema versions; kept in Fixtures/)
/// opens with today's code: every database is brought to its schema's version in place, and what
/// it held is still there and usable.
@Suite struct ContainerUpgradeTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Fixtures/container-2026-12-01"
    ).path

    func copyOfFixture(_ dir: TemporaryDirectory) throws -> String {
        let target = dir.at("container")
        try FileManager.default.copyItem(atPath: Self.fixture, toPath: target)
        return target
    }

    func version(_ path: String) throws -> Int32 {
        try Database(path: path).read { try SQLiteSchema.version(&$0) }
    }

    @Test func anOldContainerUpgradesInPlace() throws {
        let dir = try TemporaryDirectory("container-upgrade")
        defer { dir.remove() }
        let path = try copyOfFixture(dir)
        let layout = ContainerLayout(root: path)
        for db in [layout.stateDatabase, layout.agentDatabase, layout.tasksDatabase] {
            #expect(try version(db) == 0, "the fixture predates versions")
        }

        // The client's state: the installed release and its files, the device ID kept.
        let container = try ClientContainer(path: path)
        #expect(try version(layout.stateDatabase) == ContainerSchema.state.latest)
        #expect(container.deviceID == "9318a308-34cf-495d-87a7-2c9545722b89")
        let installed = try #require(try container.installed("Levels"))
        #expect(installed.version == 1)
        let file = container.releaseFolder("Levels", digest: installed.digest) + "/Levels/1.txt"
        #expect(FileManager.default.contents(atPath: file) == Data("one\n".utf8))
        // URL downloads work on the upgraded tables.
        let downloads = try DownloadManager(containerPath: path) { _ in }
        #expect(try downloads.fetchCurrentDownloads().isEmpty)

        // The agent's queue: the install event it ran.
        let agent = try AgentStore(containerPath: path)
        #expect(try version(layout.agentDatabase) == ContainerSchema.agent.latest)
        #expect(try agent.recent(10).map { "\($0.request.name) \($0.state)" } == ["install done"])
        let seq = try agent.enqueue(.periodic, bypassBudget: false)
        #expect(try agent.event(seq)?.state == "queued")

        // The task scheduler's database and the launch record.
        let scheduler = try TaskScheduler(
            configuration: .init(permittedIdentifiers: ["com.example.refresh"], databasePath: layout.tasksDatabase))
        #expect(scheduler.pendingTaskRequests().isEmpty)
        #expect(try version(layout.tasksDatabase) == ContainerSchema.tasks.latest)
        try AppLaunchRecord.record(containerPath: path)
        #expect(AppLaunchRecord.firstLaunch(containerPath: path) != nil)

        // Opening again changes nothing.
        _ = try ClientContainer(path: path)
        #expect(try version(layout.stateDatabase) == ContainerSchema.state.latest)
    }

    @Test func aContainerFromANewerBacklotIsRefused() throws {
        let dir = try TemporaryDirectory("container-newer")
        defer { dir.remove() }
        let path = try copyOfFixture(dir)
        let layout = ContainerLayout(root: path)
        try Database(path: layout.stateDatabase).transaction {
            try $0.execute("PRAGMA user_version = \(ContainerSchema.state.latest + 1)")
        }
        do {
            _ = try ClientContainer(path: path)
            Issue.record("a container of a newer schema was opened")
        } catch let e as BacklotError {
            #expect(e.code == .invalidInput && e.message.contains("newer"), "\(e)")
        }
    }

    @Test func aNewContainerGetsEveryStepOnceEvenWithTwoOpeners() throws {
        let dir = try TemporaryDirectory("container-new")
        defer { dir.remove() }
        let path = dir.at("fresh")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let failures = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            do { _ = try AgentStore(containerPath: path) } catch { failures.add(1, ordering: .relaxed) }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
        #expect(try version(ContainerLayout(root: path).agentDatabase) == ContainerSchema.agent.latest)
    }
}
