import BacklotBasics
import BacklotContainer
import BacklotStore
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

@testable import BacklotClient

/// Numbers a container holds were written by another process (or by anyone who can write the
/// folder): read back, they go through ``CheckedInteger``; a crafted row is an error, never a trap.
@Suite(.serialized) struct StoredNumberTests {
    func manager(_ dir: TemporaryDirectory, restrictions: DownloadRestrictions? = nil) throws -> DownloadManager {
        // The agent's role: nothing runs by itself while the test crafts rows.
        try DownloadManager(containerPath: dir.at("c"), restrictions: restrictions, role: .agent) { _ in }
    }

    /// A posted outcome whose file path (a row another process wrote) is outside the hand-over
    /// folder: not handed to the app as its file, and the file it names is neither moved nor
    /// deleted.
    @Test func aPostedOutcomeNamingAFileOutsideTheHandoverFolderLeavesItAlone() throws {
        let dir = try TemporaryDirectory("stored-paths")
        defer { dir.remove() }
        let victim = try dir.write("victim.txt", "keep me")
        let events = Mutex<[String]>([])
        let m = try DownloadManager(containerPath: dir.at("c"), role: .agent) { event in
            events.withLock { $0.append("\(event)") }
        }
        // And one in the hand-over folder, which is delivered (and deleted, as the handler left it).
        try FileSystem.makeDirectories(m.container.layout.handoverFolder)
        let handed = m.container.layout.handoverFolder + "/handed.file"
        try Data("ok".utf8).write(to: URL(fileURLWithPath: handed))
        for path in [victim, handed] {
            try m.container.store.database.transaction { tx in
                _ = try tx.run(
                    "INSERT INTO url_events(identifier, url, file_size, essential, priority, kind, path, message, code, delivered, staged, owner) VALUES ('d', 'https://example.com/f', NULL, 0, 0, 'finished', ?, NULL, NULL, 0, NULL, 'agent')",
                    [.text(path)])
            }
        }
        try m.startListening()  // (claims the posted events, in order)
        defer { try? m.stopListening() }
        try Wait.until("the outcome in the hand-over folder is delivered", timeout: .seconds(30)) {
            events.withLock { $0 }.contains { $0.contains("handed.file") }
        }
        #expect(FileSystem.exists(victim), "the file the row names is not deleted")
        let seen = events.withLock { $0 }
        #expect(!seen.contains { $0.contains("victim") } && seen.contains { $0.contains("handed.file") }, "\(seen)")
        #expect(!FileSystem.exists(handed))
    }

    /// A fetch report another process recorded (its outcome, handed over through the container):
    /// a count that is negative or past 2^40 is refused when read, so that the C library's
    /// conversions and sums of them (`backlot_last_fetch`) cannot trap.
    @Test func aRecordedFetchReportWithACountOutOfRangeIsRefused() throws {
        func report(_ chunks: String) -> Data {
            Data(
                #"{"id":"Levels","version":1,"downloadedBytes":10,"downloadedChunks":\#(chunks),"reusedChunks":0,"linkedFiles":0}"#
                    .utf8)
        }
        for bad in ["-1", "\(Int.max)", "1099511627777"] {
            #expect(throws: DecodingError.self, "\(bad)") {
                _ = try JSONDecoder().decode(AssetPackManager.FetchReport.self, from: report(bad))
            }
        }
        #expect(try JSONDecoder().decode(AssetPackManager.FetchReport.self, from: report("3")).downloadedChunks == 3)
    }

    @Test func aStoredNegativeOrHugeSizeIsAnErrorNamingTheColumn() throws {
        let dir = try TemporaryDirectory("stored-numbers")
        defer { dir.remove() }
        let m = try manager(dir)
        for size in [Int64(-1), Int64.min] {
            try m.container.store.database.transaction { tx in
                _ = try tx.run("DELETE FROM url_downloads")
                _ = try tx.run(
                    "INSERT INTO url_downloads(identifier, url, file_size, essential, priority, created) VALUES ('d', 'https://example.com/f', ?, 0, 0, 0)",
                    [.integer(size)])
            }
            #expect { try m.fetchCurrentDownloads() } throws: { e in
                guard let e = e as? BacklotError else { return false }
                return e.code == .invalidInput && e.message.contains("file_size") && e.message.contains("\(size)")
            }
        }
    }

    @Test func aSizeThatSQLiteCannotHoldIsRefusedBeforeAnythingIsStored() throws {
        let dir = try TemporaryDirectory("stored-numbers")
        defer { dir.remove() }
        let m = try manager(dir)
        for size in [UInt64(Int64.max) + 1, UInt64.max] {
            let d = URLDownload(identifier: "big-\(size)", url: URL(string: "https://example.com/f")!, fileSize: size)
            #expect { try m.scheduleDownload(d) } throws: { e in
                (e as? BacklotError)?.code == .invalidInput && "\(e)".contains("fileSize") && "\(e)".contains("\(size)")
            }
        }
        #expect(try m.fetchCurrentDownloads().isEmpty)
    }

    @Test func storedCountersAtTheirLimitsNeverOverflow() throws {
        let dir = try TemporaryDirectory("stored-numbers")
        defer { dir.remove() }
        let restrictions = DownloadRestrictions(
            downloadAllowance: .max, essentialDownloadAllowance: .max, domainAllowList: ["example.com"])
        let m = try manager(dir, restrictions: restrictions)
        // A retry count of Int64.max: the download fails instead of pausing, and nothing traps.
        try m.container.store.database.transaction { tx in
            _ = try tx.run(
                "INSERT INTO url_retries(identifier, attempts, retry_after) VALUES ('r', ?, 0)", [.integer(Int64.max)])
        }
        #expect(m.pauseAgain("r") == false)
        // Bytes used at UInt64.max: more bytes saturate, and the allowance left is 0.
        try m.container.setMeta(.used, String(UInt64.max))
        try m.countTowardsAllowance(bytes: 10, essential: false)
        #expect(m.used(false) == .max)
        #expect(m.remainingAllowance(essential: false) == 0)
        // Installed bytes at UInt64.max: a download of any size is over BAMaxInstallSize, reported without a trap.
        try m.container.setMeta(.installedBytes, String(UInt64.max))
        let capped = try manager(
            dir,
            restrictions: DownloadRestrictions(
                downloadAllowance: .max, essentialDownloadAllowance: .max, domainAllowList: [],
                maxInstallSize: .max))
        try capped.markAppLaunched()
        #expect(throws: BackgroundDownloadError.maxInstallSizeExceeded(needed: 1, remaining: 0)) {
            try capped.scheduleDownload(
                URLDownload(identifier: "x", url: URL(string: "https://example.com/f")!, fileSize: 1))
        }
    }
}
