import BacklotBasics
import BacklotClient
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

/// Apple's 2022 manager over a real server: where outcomes go, the exclusive-control forms, the errors.
@Suite(.serialized) struct BADownloadManagerTests {
    /// Outcomes several recorders write to.
    final class Outcomes: Sendable {
        let finished = Mutex<[(String, [UInt8])]>([])
    }

    final class Recorder: BADownloadManagerDelegate, @unchecked Sendable {
        let finished = Mutex<[(String, [UInt8])]>([])
        let done = DispatchSemaphore(value: 0)
        /// Where each outcome is written too.
        let shared: Outcomes?
        init(shared: Outcomes? = nil) { self.shared = shared }
        func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {
            let bytes = (try? Data(contentsOf: fileURL)).map(Array.init) ?? []
            finished.withLock { $0.append((download.identifier, bytes)) }
            shared?.finished.withLock { $0.append((download.identifier, bytes)) }
            done.signal()
        }
        func download(_ download: BADownload, failedWithError error: any Error) { done.signal() }
    }

    /// A published archive, its URL and its bytes.
    static func served(_ f: ClientFixture) throws -> (URL, [UInt8]) {
        try f.publish(id: "Levels")
        let archive = try f.archivePath("Levels")
        let url = URL(string: f.server.baseURL + "v1/packs/" + URL(fileURLWithPath: archive).lastPathComponent)!
        return (url, Array(try Data(contentsOf: URL(fileURLWithPath: archive))))
    }

    @Test func anOutcomeWithoutADelegateWaitsForTheNextOne() throws {
        let f = try ClientFixture()
        let (url, bytes) = try Self.served(f)
        let manager = try BADownloadManager(containerPath: f.dir.at("device"))
        let download = BAURLDownload(
            identifier: "levels", request: URLRequest(url: url), essential: false, fileSize: bytes.count,
            applicationGroupIdentifier: "group.com.example.game", priority: .default)
        try manager.scheduleDownload(download)
        manager.manager.waitUntilIdle()
        #expect(try manager.fetchCurrentDownloads().isEmpty, "it ran, with no delegate to tell")
        let recorder = Recorder()
        manager.delegate = recorder
        #expect(recorder.done.wait(timeout: .now() + 120) == .success, "the kept outcome reaches the new delegate")
        let got = recorder.finished.withLock { $0 }
        #expect(got.count == 1 && got.first?.0 == "levels" && got.first?.1 == bytes)
        manager.delegate = nil
    }

    /// The delegate is a weak reference kept behind a `Mutex` (the proof of `DelegateSlot`'s
    /// `Weak`): threads replace it and read it while a download runs and its events are delivered,
    /// some setting a delegate that is released at once (its weak reference zeroed meanwhile); the
    /// outcome reaches one delegate (one of those, maybe, while it is set), once, with the right bytes.
    @Test func threadsReplaceTheDelegateWhileADownloadRuns() throws {
        let f = try ClientFixture()
        let (url, bytes) = try Self.served(f)
        let manager = try BADownloadManager(containerPath: f.dir.at("device"))
        let outcomes = Outcomes()
        let recorders = (0..<4).map { _ in Recorder(shared: outcomes) }
        manager.delegate = recorders[0]
        try manager.scheduleDownload(
            BAURLDownload(
                identifier: "levels", request: URLRequest(url: url), essential: false, fileSize: bytes.count,
                applicationGroupIdentifier: "group.com.example.game", priority: .default))
        onThreadsOfTheirOwn(4) { t in
            for n in 0..<2_000 {
                manager.delegate = n % 7 == 0 ? Recorder(shared: outcomes) : recorders[(t + n) % recorders.count]
                _ = manager.delegate
            }
        }
        manager.delegate = recorders[0]
        manager.manager.waitUntilIdle()
        var delivered: [(String, [UInt8])] = []
        for _ in 0..<1_200 {
            delivered = outcomes.finished.withLock { $0 }
            if !delivered.isEmpty { break }
            usleep(100_000)
        }
        #expect(delivered.count == 1 && delivered.first?.0 == "levels" && delivered.first?.1 == bytes)
        manager.delegate = nil
    }

    @Test func cancellingWhatIsNotScheduledIsApplesError() throws {
        let f = try ClientFixture()
        let manager = try BADownloadManager(containerPath: f.dir.at("device"))
        let download = BAURLDownload(
            identifier: "nothing", request: URLRequest(url: URL(string: "https://127.0.0.1/x")!), fileSize: 1,
            applicationGroupIdentifier: "g")
        #expect { try manager.cancel(download) } throws: { ($0 as? BAError)?.code == .downloadNotScheduled }
        #expect(throws: BackgroundDownloadError.self) {
            try manager.scheduleDownload(
                BAURLDownload(
                    identifier: "plain", request: URLRequest(url: URL(string: "http://cdn.example.com/x")!),
                    fileSize: 1, applicationGroupIdentifier: "g"))
        }
    }

    @Test func exclusiveControlBeforeADateGivesUpWhileAnotherThreadHoldsIt() async throws {
        let f = try ClientFixture()
        let manager = try BADownloadManager(containerPath: f.dir.at("device"))
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Thread {
            manager.withExclusiveControl { acquired, _ in
                #expect(acquired)
                holding.signal()
                release.wait()
            }
        }
        holder.start()
        holding.wait()
        let answer = Mutex<(Bool, String?)?>(nil)
        manager.withExclusiveControl(beforeDate: Date()) { acquired, error in
            answer.withLock { $0 = (acquired, error.map { "\($0)" }) }
        }
        let (acquired, message) = try #require(answer.withLock { $0 })
        #expect(!acquired && message?.contains("was not acquired") == true)
        await #expect(throws: BacklotError.self) {
            try await manager.withExclusiveControl(before: Date()) { 1 }
        }
        release.signal()
        // Once released, each form acquires it; the handler form re-enters from inside the async body.
        let nested = try await manager.withExclusiveControl(before: Date(timeIntervalSinceNow: 600)) { () -> Bool in
            var inner = false
            manager.withExclusiveControl { acquired, _ in inner = acquired }
            return inner
        }
        #expect(nested)
    }
}
