import BacklotBasics
import BacklotContainer
import BacklotStore
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotClient

/// Numbers a container holds were written by another process (or by anyone who can write the
/// folder): read back, they go through ``CheckedInteger``; a crafted row is an error, never a trap.
@Suite(.serialized) struct StoredNumberTests {
    func manager(_ dir: TemporaryDirectory, restrictions: DownloadRestrictions? = nil) throws -> DownloadManager {
        // The agent's role: nothing runs by itself while the test crafts rows.
        try DownloadManager(containerPath: dir.at("c"), restrictions: restrictions, role: .agent) { _ in }
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
