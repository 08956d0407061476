import BacklotBasics
import BacklotInfoPlist
import BacklotRepository
import BacklotServer
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

@testable import BacklotClient

/// URL downloads (Apple's BADownloadManager shape) against a real server.
@Suite(.serialized) struct DownloadManagerTests {
    final class Recorder: @unchecked Sendable {
        let events = Mutex<[String]>([])
        let delivered = Mutex<[String: [UInt8]]>([:])
        let moveTo: String?
        let done = DispatchSemaphore(value: 0)
        init(moveTo: String?) { self.moveTo = moveTo }

        func handle(_ event: DownloadManager.Event) {
            switch event {
            case .began(let d): events.withLock { $0.append("began \(d.identifier)") }
            case .progress: break
            case .paused(let d): events.withLock { $0.append("paused \(d.identifier)") }
            case .failed(let d, let e):
                events.withLock { $0.append("failed \(d.identifier): \(e)") }
                done.signal()
            case .finished(let d, let url):
                events.withLock { $0.append("finished \(d.identifier)") }
                if let moveTo {
                    try? FileManager.default.moveItem(atPath: url.path, toPath: moveTo + "/" + d.identifier)
                } else {
                    delivered.withLock { $0[d.identifier] = Array((try? Data(contentsOf: url)) ?? Data()) }
                }
                done.signal()
            }
        }
    }

    func serve() throws -> (ClientFixture, [UInt8], URL, [String]) {
        let f = try ClientFixture()
        var g = SeededGenerator(seed: 12)
        let bytes = g.bytes(300_000)
        try FileSystem.makeDirectory(f.repository.directory.publicTreePath + "/files")
        try RepositoryDirectory.writePublic(bytes: bytes, to: f.repository.directory.publicTreePath + "/files/data.bin")
        let ranges = Mutex<[String]>([])
        _ = ranges
        return (f, bytes, URL(string: f.server.baseURL + "files/data.bin")!, [])
    }

    @Test func aFinishedFileMustBeMovedByTheHandlerOrItIsDeleted() throws {
        let (f, bytes, url, _) = try serve()
        try FileManager.default.createDirectory(atPath: f.dir.at("moved"), withIntermediateDirectories: true)
        let keeper = Recorder(moveTo: f.dir.at("moved"))
        let manager = try DownloadManager(containerPath: f.dir.at("c1")) { keeper.handle($0) }
        try manager.scheduleDownload(URLDownload(identifier: "data", url: url, fileSize: UInt64(bytes.count)))
        #expect(throws: BackgroundDownloadError.duplicateIdentifier("data")) {
            try manager.scheduleDownload(URLDownload(identifier: "data", url: url))
        }
        keeper.done.wait()
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: f.dir.at("moved/data")))) == bytes)
        #expect(keeper.events.withLock { $0 } == ["began data", "finished data"])
        #expect(try manager.fetchCurrentDownloads().isEmpty)

        let ignorer = Recorder(moveTo: nil)
        let other = try DownloadManager(containerPath: f.dir.at("c2")) { ignorer.handle($0) }
        try other.scheduleDownload(URLDownload(identifier: "again", url: url))
        ignorer.done.wait()
        #expect(ignorer.delivered.withLock { $0["again"] == bytes })
        // The file is deleted once the handler has returned (the handler signalled before that).
        // (The hand-over folder stays, empty: another process may be renaming a file into it.)
        func files() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: f.dir.at("c2/downloads")).filter { $0 != "handover" }
                + FileManager.default.contentsOfDirectory(atPath: f.dir.at("c2/downloads/handover"))
        }
        var left = try files()
        for _ in 0..<200 where !left.isEmpty {
            usleep(50_000)
            left = try files()
        }
        #expect(left.isEmpty, "not moved, so deleted")
    }

    @Test func aForegroundDownloadResumesWhatAlreadyArrived() throws {
        let (f, bytes, url, _) = try serve()
        let recorder = Recorder(moveTo: nil)
        let manager = try DownloadManager(containerPath: f.dir.at("c")) { recorder.handle($0) }
        // Half of it arrived in an earlier, interrupted attempt; the server's file is then made unreadable
        // past that point for anyone asking from 0 by serving a different first half.
        let part = f.dir.at("c/downloads")
        try FileManager.default.createDirectory(atPath: part, withIntermediateDirectories: true)
        let download = URLDownload(identifier: "resume", url: url, fileSize: UInt64(bytes.count))
        try Data(bytes.prefix(150_000)).write(to: URL(fileURLWithPath: manager.partialPath(download.identifier)))
        try manager.startForegroundDownload(download)
        recorder.done.wait()
        #expect(recorder.delivered.withLock { $0["resume"] == bytes }, "\(recorder.events.withLock { $0 })")
    }

    /// The app (which can write its container) left a link where the download's partial file
    /// goes, to a file elsewhere, or a hard link to one: the download neither appends to it nor
    /// truncates it. The link is removed, the download runs from the start and delivers the bytes.
    @Test(arguments: ["symbolic", "hard"]) func aLinkLeftWhereThePartialFileGoesIsNotWrittenThrough(kind: String) throws
    {
        let (f, bytes, url, _) = try serve()
        let recorder = Recorder(moveTo: nil)
        let manager = try DownloadManager(containerPath: f.dir.at("c")) { recorder.handle($0) }
        let victim = f.dir.at("victim.txt")
        try Data("keep me as I am".utf8).write(to: URL(fileURLWithPath: victim))
        try FileSystem.makeDirectories(f.dir.at("c/downloads"))
        let download = URLDownload(identifier: "linked", url: url, fileSize: UInt64(bytes.count))
        let part = manager.partialPath(download.identifier)
        #expect((kind == "symbolic" ? symlink(victim, part) : link(victim, part)) == 0)
        try manager.startForegroundDownload(download)
        recorder.done.wait()
        #expect(FileManager.default.contents(atPath: victim) == Data("keep me as I am".utf8))
        #expect(recorder.delivered.withLock { $0["linked"] == bytes }, "\(recorder.events.withLock { $0 })")
    }

    @Test func essentialSizesAndRestrictionsAreEnforced() throws {
        let (f, bytes, url, _) = try serve()
        let recorder = Recorder(moveTo: nil)
        let restricted = DownloadRestrictions(
            downloadAllowance: 100_000, essentialDownloadAllowance: 1_000_000, domainAllowList: ["*.example.com"])
        let manager = try DownloadManager(containerPath: f.dir.at("c"), restrictions: restricted) {
            recorder.handle($0)
        }
        #expect(throws: BackgroundDownloadError.domainNotAllowed("127.0.0.1")) {
            try manager.scheduleDownload(URLDownload(identifier: "a", url: url))
        }
        let local = DownloadRestrictions(
            downloadAllowance: 100_000, essentialDownloadAllowance: 1_000_000, domainAllowList: ["127.0.0.1"])
        let m2 = try DownloadManager(containerPath: f.dir.at("c2"), restrictions: local) { recorder.handle($0) }
        // Essential downloads are scheduled by the agent (from an install or update content request), never by the app.
        #expect(throws: BackgroundDownloadError.essentialDownloadNotPermitted("e")) {
            try m2.scheduleDownload(URLDownload(identifier: "e", url: url, fileSize: 10, isEssential: true))
        }
        let agentSide = try DownloadManager(containerPath: f.dir.at("c2"), restrictions: local, role: .agent) {
            recorder.handle($0)
        }
        #expect(throws: BackgroundDownloadError.essentialDownloadNeedsFileSize("e")) {
            try agentSide.scheduleDownload(URLDownload(identifier: "e", url: url, isEssential: true))
        }
        #expect(throws: BackgroundDownloadError.allowanceExceeded(needed: 300_000, remaining: 100_000)) {
            try m2.scheduleDownload(URLDownload(identifier: "big", url: url, fileSize: 300_000))
        }
        // Without a declared size, the transfer stops when the allowance runs out.
        try m2.scheduleDownload(URLDownload(identifier: "unsized", url: url))
        recorder.done.wait()
        #expect(
            recorder.events.withLock {
                $0.last?.contains("failed unsized") == true && $0.last?.contains("allowance") == true
            }, "\(recorder.events.withLock { $0 })")
        // A declared size that is wrong fails.
        try agentSide.scheduleDownload(
            URLDownload(identifier: "wrong", url: url, fileSize: UInt64(bytes.count - 1), isEssential: true))
        agentSide.resumeScheduled()
        recorder.done.wait()
        #expect(recorder.events.withLock { $0.last?.contains("failed wrong") == true })
        // After the first launch the restrictions are lifted.
        try m2.markAppLaunched()
        try m2.scheduleDownload(URLDownload(identifier: "later", url: url, fileSize: UInt64(bytes.count)))
        recorder.done.wait()
        #expect(recorder.delivered.withLock { $0["later"] == bytes }, "\(recorder.events.withLock { $0 })")
    }

    @Test func theMaximumInstallSizeIsEnforced() throws {
        let (f, bytes, url, _) = try serve()
        let recorder = Recorder(moveTo: nil)
        let limits = DownloadRestrictions(
            downloadAllowance: 10_000_000, essentialDownloadAllowance: 10_000_000, domainAllowList: ["127.0.0.1"],
            maxInstallSize: 500_000)
        let manager = try DownloadManager(containerPath: f.dir.at("c"), restrictions: limits) { recorder.handle($0) }
        try manager.scheduleDownload(URLDownload(identifier: "one", url: url, fileSize: UInt64(bytes.count)))
        recorder.done.wait()
        #expect(
            throws: BackgroundDownloadError.maxInstallSizeExceeded(
                needed: UInt64(bytes.count), remaining: 500_000 - UInt64(bytes.count))
        ) {
            try manager.scheduleDownload(URLDownload(identifier: "two", url: url, fileSize: UInt64(bytes.count)))
        }
    }

    @Test func exclusiveControlIsMutuallyExclusive() throws {
        let dir = try TemporaryDirectory("exclusive")
        defer { dir.remove() }
        let a = try DownloadManager(containerPath: dir.at("c")) { _ in }
        let b = try DownloadManager(containerPath: dir.at("c")) { _ in }
        let inside = Atomic<Int>(0)
        let most = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            try? (i % 2 == 0 ? a : b).withExclusiveControl {
                let n = inside.wrappingAdd(1, ordering: .relaxed).newValue
                if n > most.load(ordering: .relaxed) { most.store(n, ordering: .relaxed) }
                usleep(20_000)
                inside.wrappingAdd(-1, ordering: .relaxed)
            }
        }
        #expect(most.load(ordering: .relaxed) == 1)
    }

    @Test func restrictionsComeFromAnInfoPlist() throws {
        let plist = try PropertyListReader.read(
            path: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("BacklotInfoPlistTests/Fixtures/valid-self-hosted.binary.plist").path)
        let r = try DownloadRestrictions(infoPlist: plist)
        #expect(
            r.downloadAllowance == 9_300_000_000 && r.essentialDownloadAllowance == 0
                && r.maxInstallSize == 23_000_000_000)
        #expect(
            r.allows(host: "cdn.example.com") && r.allows(host: "a.example.net") && !r.allows(host: "example.net")
                && !r.allows(host: "evil.com"))
    }
}
