import BacklotBasics
import BacklotContainer
import BacklotRepository
import BacklotStore
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

@testable import BacklotClient

/// Issue #19 §4: the restrictions as Apple applies them.
extension DownloadManagerTests {
    /// A server with a 50 kB file.
    func serveSmall() throws -> (ClientFixture, [UInt8], URL) {
        let f = try ClientFixture()
        var g = SeededGenerator(seed: 19)
        let bytes = g.bytes(50_000)
        try FileSystem.makeDirectory(f.repository.directory.publicTreePath + "/files")
        try RepositoryDirectory.writePublic(
            bytes: bytes, to: f.repository.directory.publicTreePath + "/files/small.bin")
        return (f, bytes, URL(string: f.server.baseURL + "files/small.bin")!)
    }

    @Test func theAppsLaunchRecordLiftsTheRestrictions() throws {
        let (f, _, url) = try serveSmall()
        let restricted = DownloadRestrictions(
            downloadAllowance: 100_000, essentialDownloadAllowance: 0, domainAllowList: ["cdn.example.com"])
        let manager = try DownloadManager(containerPath: f.dir.at("c"), restrictions: restricted, role: .agent) { _ in }
        #expect(manager.remainingAllowance(essential: false) == 100_000)
        #expect(throws: BackgroundDownloadError.domainNotAllowed("127.0.0.1")) {
            try manager.scheduleDownload(URLDownload(identifier: "a", url: url))
        }
        // The app records its launch in the container's one record (what AppPresence.markRunning does).
        try AppLaunchRecord.record(containerPath: f.dir.at("c"))
        #expect(manager.remainingAllowance(essential: false) == nil)
        try manager.scheduleDownload(URLDownload(identifier: "a", url: url))
        // markAppLaunched writes the same record: another container's manager and the record agree.
        let other = try DownloadManager(containerPath: f.dir.at("c2"), restrictions: restricted, role: .agent) { _ in }
        #expect(AppLaunchRecord.firstLaunch(containerPath: f.dir.at("c2")) == nil)
        try other.markAppLaunched()
        #expect(AppLaunchRecord.firstLaunch(containerPath: f.dir.at("c2")) != nil)
        #expect(other.remainingAllowance(essential: true) == nil)
    }

    @Test func theInstallCapCountsWhatIsScheduledAndInFlight() throws {
        let (f, bytes, url) = try serveSmall()
        let recorder = Recorder(moveTo: nil)
        let cap = DownloadRestrictions(
            downloadAllowance: 0, essentialDownloadAllowance: 0, domainAllowList: [], maxInstallSize: 60_000)
        var limits = cap
        limits.appliesBeforeFirstLaunch = false
        // The agent's manager: scheduled downloads wait until it resumes them, so all three are in flight at once.
        let manager = try DownloadManager(containerPath: f.dir.at("c"), restrictions: limits, role: .agent) {
            recorder.handle($0)
        }
        let size = UInt64(bytes.count)
        try manager.scheduleDownload(URLDownload(identifier: "one", url: url, fileSize: size))
        for id in ["two", "three"] {
            #expect(throws: BackgroundDownloadError.maxInstallSizeExceeded(needed: size, remaining: 60_000 - size)) {
                try manager.scheduleDownload(URLDownload(identifier: id, url: url, fileSize: size))
            }
        }
        // Another process's manager sees the reservation (it is in the container's database).
        let again = try DownloadManager(containerPath: f.dir.at("c"), restrictions: limits, role: .agent) {
            recorder.handle($0)
        }
        #expect(throws: BackgroundDownloadError.maxInstallSizeExceeded(needed: size, remaining: 60_000 - size)) {
            try again.scheduleDownload(URLDownload(identifier: "two", url: url, fileSize: size))
        }
        // A cancelled download gives its reservation back.
        try manager.cancel(URLDownload(identifier: "one", url: url))
        try manager.scheduleDownload(URLDownload(identifier: "two", url: url, fileSize: size))
        manager.resumeScheduled()
        recorder.done.wait()
        #expect(recorder.delivered.withLock { $0["two"] == bytes })
        // Installed now: 10 kB left, so a download of no declared size stops at the cap and fails.
        try manager.scheduleDownload(URLDownload(identifier: "unsized", url: url))
        manager.resumeScheduled()
        recorder.done.wait()
        #expect(
            recorder.events.withLock {
                $0.last?.hasPrefix("failed unsized") == true && $0.last?.contains("maximum install size") == true
            },
            "\(recorder.events.withLock { $0 })")
        #expect(try manager.fetchCurrentDownloads().isEmpty)
    }

    @Test func theAppCannotScheduleEssentialDownloadsAndForegroundCallsAreTheActiveAppsOnly() throws {
        let (f, _, url) = try serveSmall()
        let app = try DownloadManager(containerPath: f.dir.at("c")) { _ in }
        let essential = URLDownload(identifier: "e", url: url, fileSize: 50_000, isEssential: true)
        #expect { try app.scheduleDownload(essential) } throws: { e in (e as? BackgroundDownloadError)?.code == 109 }
        #expect { try app.startForegroundDownload(essential) } throws: { e in
            (e as? BackgroundDownloadError)?.code == 109
        }
        #expect(try app.fetchCurrentDownloads().isEmpty)
        let agent = try DownloadManager(containerPath: f.dir.at("c"), role: .agent) { _ in }
        #expect { try agent.startForegroundDownload(URLDownload(identifier: "n", url: url)) } throws: { e in
            (e as? BackgroundDownloadError) == .callFromInactiveProcessNotAllowed("n")
                && (e as? BackgroundDownloadError)?.code == 51
        }
    }

    @Test func promotingADownloadAnotherProcessTransfersTakesItOver() throws {
        let (f, bytes, url) = try serveSmall()
        let recorder = Recorder(moveTo: nil)
        let app = try DownloadManager(containerPath: f.dir.at("c")) { recorder.handle($0) }
        let download = URLDownload(identifier: "big", url: url, fileSize: UInt64(bytes.count))
        // The agent (another process) holds the download's lock while it transfers it.
        try FileSystem.makeDirectory(f.dir.at("c/.download-locks"))
        let held = try #require(app.lockDownload(download.identifier))
        try app.withExclusiveControl {
            try app.container.store.database.transaction { tx in
                try tx.run(
                    "INSERT INTO url_downloads(identifier, url, file_size, essential, priority, created) VALUES (?, ?, ?, 0, 0, 0)",
                    [.text(download.identifier), .text(url.absoluteString), .integer(Int64(bytes.count))])
            }
        }
        try app.startForegroundDownload(download)
        // The app asks the transferring process to stop (what its transfer checks as it goes) …
        #expect(eventually { FileManager.default.fileExists(atPath: app.takeoverPath(download.identifier)) })
        // … which stops, keeping what arrived, and releases the lock: the app goes on and finishes it.
        held.release()
        recorder.done.wait()
        #expect(recorder.delivered.withLock { $0["big"] == bytes }, "\(recorder.events.withLock { $0 })")
        #expect(!FileManager.default.fileExists(atPath: app.takeoverPath(download.identifier)))

        // The transferring side: asked to hand over, it stops without failing or dropping the download.
        let events = Recorder(moveTo: nil)
        let agent = try DownloadManager(containerPath: f.dir.at("c2"), role: .agent) { events.handle($0) }
        try agent.scheduleDownload(download)
        FileManager.default.createFile(atPath: agent.takeoverPath(download.identifier), contents: nil)
        #expect(agent.run(download) == .elsewhere)
        #expect(try agent.fetchCurrentDownloads().map(\.identifier) == ["big"])
        #expect(!events.events.withLock { $0.contains { $0.hasPrefix("failed") || $0.hasPrefix("finished") } })
    }
}

/// Waits (polling) until `condition` holds, at most about 60 s of real time, which is not what is
/// measured (what it waits for runs on other threads, which a loaded machine may keep waiting).
private func eventually(_ condition: () -> Bool) -> Bool {
    for _ in 0..<6_000 {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}
