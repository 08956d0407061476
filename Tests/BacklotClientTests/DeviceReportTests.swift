import BacklotBasics
import BacklotProtocol
import BacklotRepository
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotClient

/// A scripted fleet against a real server: the devices it counts from their reports match the
/// devices that ran (requests do not), an update moves devices from one version to the next
/// without counting them twice, a device told not to report is not counted, and an archive two
/// apps share is credited to the app whose device downloaded it.
@Suite(.serialized) struct DeviceReportTests {
    @Test func theServerCountsTheFleetsDevicesNotItsRequests() async throws {
        let f = try ClientFixture()
        try f.publish(seed: 7)
        let fleet = 24
        var managers: [AssetPackManager] = []
        for i in 0..<fleet {
            let m = try f.manager(container: "device-\(i)")
            _ = try await m.fetch(packWithID: "Levels")
            // Every device checks again twice: more requests, the same devices.
            _ = try await m.checkForUpdates()
            _ = try await m.checkForUpdates()
            managers.append(m)
        }
        // A device that does not report is not counted.
        var quiet = AssetPackManager.Configuration(
            containerPath: f.dir.at("quiet"), catalogURL: f.catalogURL(), app: f.app, channel: .internal,
            trustedKeys: [f.pinned])
        quiet.sendsReports = false
        _ = try await AssetPackManager(configuration: quiet).fetch(packWithID: "Levels")

        // Version 2; 10 devices update the same day.
        try f.publish(seed: 7, edit: true)
        for m in managers.prefix(10) { _ = try await m.checkForUpdates() }

        f.server.downloads.flush()
        let adoption = try f.repository.deviceReports.report(app: f.app, days: 1)
        func row(_ version: Int?) -> AdoptionReport.Row? {
            adoption.rows.first { $0.channel == .internal && $0.version == version }
        }
        let devices = try #require(row(nil)?.devices)
        #expect(abs(Double(devices - Int64(fleet))) <= 0.05 * Double(fleet), "\(devices) devices counted of \(fleet)")
        #expect(row(1)?.devices == 14 && row(2)?.devices == 10, "\(adoption.rows)")
        #expect(row(1)?.started == 24 && row(1)?.finished == 24 && row(1)?.failed == nil, "0 failures: below 10")
        #expect(row(2)?.started == 10 && row(2)?.finished == 10)
        let catalogRequests = try f.repository.downloads.report(app: f.app, days: 1).rows.filter {
            $0.kind == "catalog"
        }.map(\.requests).reduce(0, +)
        #expect(catalogRequests >= Int64(3 * fleet), "requests (\(catalogRequests)) are not devices")

        // A day later each device is counted once again, on what it holds.
        let tomorrow = Date().addingTimeInterval(86_400)
        for m in managers { #expect(m.reporter.sendIfDue(now: tomorrow)) }
        #expect(!managers[0].reporter.sendIfDue(now: tomorrow), "nothing more is due that day")
    }

    @Test func anArchiveTwoAppsShareIsCreditedToTheAppWhoseDeviceDownloadedIt() async throws {
        let f = try ClientFixture()
        try f.publish(seed: 9)
        // The other app uploads the same archive later: by SHA-256 alone it would be credited.
        let other = "com.example.other"
        try f.repository.apps.create(other)
        try f.repository.apps.createPack(app: other, id: "Levels")
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: try f.archivePath())))
        let v = try f.repository.uploads.uploadAndProcess(app: other, pack: "Levels", bytes: bytes)
        try f.repository.releases.release(app: other, pack: "Levels", version: v.number, channel: .internal)

        _ = try await f.manager(container: "game-device").fetch(packWithID: "Levels")
        f.server.downloads.flush()
        let game = try f.repository.downloads.report(app: f.app, days: 1).rows.filter { $0.kind == "pack" }
        let theirs = try f.repository.downloads.report(app: other, days: 1).rows.filter { $0.kind == "pack" }
        #expect(!game.isEmpty && game.allSatisfy { $0.requests > 0 }, "\(game)")
        #expect(theirs.isEmpty, "\(theirs)")
    }
}
