import BacklotBasics
import BacklotClient
import BacklotCrypto
import BacklotFleet
import BacklotHTTPServer
import BacklotProtocol
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

/// `backlot fleet`'s simulator against a real server: devices made from one install, updates
/// through the client's code, a staged rollout that splits them by their own IDs, a busy server.
@Suite(.serialized) struct FleetTests {
    /// A fleet configuration for the fixture's production catalog, in a folder of the fixture's.
    func configuration(_ f: ClientFixture, devices: Int, duration: TimeInterval) -> FleetConfiguration {
        var c = FleetConfiguration(
            catalogURL: f.catalogURL(.production), trustedKeys: [f.pinned], folder: f.dir.at("fleet"))
        c.devices = devices
        c.duration = duration
        c.checkInterval = 1
        c.firstRetry = 0.2
        c.concurrency = 4
        c.sampleInterval = 0.5
        c.verifiedDevices = devices
        c.seed = 20_261_205
        return c
    }

    @Test func devicesUpdateToAReleaseMadeWhileTheyRunAndHoldVerifiedBytes() throws {
        let f = try ClientFixture()
        try f.publish(channel: .production)
        let released = Atomic<Bool>(false)
        // The run ends as soon as every device holds version 2 (60 s at most): on a loaded machine
        // the devices take longer, and the run waits for them rather than ending at a fixed time.
        var c = configuration(f, devices: 12, duration: 60)
        c.stopWhenAllHold = "Levels@2"
        let report = try FleetSimulator(configuration: c).run { line in
            // Released once the devices are made (holding version 1), before any check: every
            // device must find version 2 at one of its checks.
            if line.contains("devices made"), !released.load(ordering: .relaxed) {
                _ = try? f.publish(seed: 42, edit: true, channel: .production)
                released.store(true, ordering: .relaxed)
            }
        }
        #expect(report.adoption.first?.holding == ["Levels@1": 12], "\(report.adoption)")
        #expect(report.holding == ["Levels@2": 12], "\(report)")
        #expect(
            report.installs == 12 && report.failedInstalls == 0 && report.failedChecks == 0,
            "\(report.failures) \(report.failureExamples)")
        #expect(report.checks >= 12)
        #expect(report.downloadedBytes > 0)
        #expect(report.verifiedDevices == 12 && report.damagedFiles.isEmpty)
        #expect(report.checkLatency.count == report.checks && report.installLatency.count == 12)
        // Every check started is counted in the lag too (0 when a worker was free when it was due).
        #expect(report.checkStartLag.count >= report.checks && report.checkStartLag.max >= 0)
        // The content is kept once: a device's unchanged file is the fleet's shared copy.
        let devices = try FileManager.default.contentsOfDirectory(atPath: f.dir.at("fleet/devices")).sorted()
        #expect(devices.count == 12)
    }

    @Test func aStagedRolloutReachesExactlyTheDevicesWhoseBucketsItCovers() throws {
        let f = try ClientFixture()
        try f.publish(channel: .production)
        let released = Atomic<Bool>(false)
        // Each device's own ID decides, by the protocol's bucket rule (docs/protocol.md §4): what
        // the fleet must hold is known once the devices are made, and the run ends when it does
        // (60 s at most: a loaded machine takes longer, and the run waits rather than ending).
        let expected = Mutex<[String: Int]>([:])
        let devices = f.dir.at("fleet/devices")
        var c = configuration(f, devices: 40, duration: 60)
        c.stopWhen = { holding in
            let want = expected.withLock { $0 }
            return !want.isEmpty && holding == want
        }
        let report = try FleetSimulator(configuration: c).run { line in
            if line.contains("devices made"), !released.load(ordering: .relaxed) {
                var split: [String: Int] = [:]
                for name in (try? FileManager.default.contentsOfDirectory(atPath: devices)) ?? [] {
                    guard let id = try? ClientContainer(existingAt: devices + "/" + name).deviceID else { continue }
                    let takes = RolloutBucket.takesCandidate(
                        deviceID: id, packID: "Levels", version: 2, basisPoints: 5000)
                    split[takes ? "Levels@2" : "Levels@1", default: 0] += 1
                }
                expected.withLock { $0 = split }
                let v2 = try? f.publish(seed: 42, edit: true, channel: .internal)
                if let v2 {
                    _ = try? f.repository.releases.release(
                        app: f.app, pack: "Levels", version: v2.version, channel: .production, rolloutPercent: 50)
                    if let request = try? f.repository.releases.requests(app: f.app).last, request.status == "pending" {
                        try? f.repository.releases.approve(requestID: request.id)
                    }
                }
                released.store(true, ordering: .relaxed)
            }
        }
        let want = expected.withLock { $0 }
        #expect(want.values.reduce(0, +) == 40, "every device's ID read: \(want)")
        #expect(want.count == 2, "40 devices all on one side of a 50 % rollout: \(want)")
        #expect(report.holding == want, "\(report)")
        #expect(report.failedInstalls == 0 && report.failedChecks == 0, "\(report.failures) \(report.failureExamples)")
    }

    @Test func aBusyCatalogIsWaitedOutAsItsRetryAfterSays() throws {
        let dir = try TemporaryDirectory("fleet-busy")
        defer { dir.remove() }
        let asked = Atomic<Int>(0)
        let server = try HTTPServer(configuration: .init(port: 0)) { _ in
            asked.wrappingAdd(1, ordering: .relaxed)
            var r = HTTPResponse.error(503, code: .busy, "busy")
            r.headers.append(("Retry-After", "1"))
            return .respond(r)
        }
        defer { server.stop(grace: 0) }
        var c = FleetConfiguration(
            catalogURL: URL(
                string: "http://127.0.0.1:\(server.port)/v1/apps/com.example.game/production/catalog.json")!,
            trustedKeys: [try Ed25519.PrivateKey().publicKey], folder: dir.at("fleet"))
        c.devices = 5
        c.duration = 2.5
        c.checkInterval = 1
        c.startInstalled = false
        c.sampleInterval = 1
        let report = try FleetSimulator(configuration: c).run()
        // Each device waits at least 1 s after a 503: within 2.5 s at most 3 checks a device.
        #expect(report.failedChecks == report.checks && report.checks > 0 && report.checks <= 15, "\(report)")
        #expect(report.retryAfterHonoured == report.checks)
        let reasons: [String] = report.failures.keys.sorted()
        #expect(reasons == ["check: unavailable (HTTP 503)"], "\(report.failures) \(report.failureExamples)")
        #expect(report.failureExamples.keys.sorted() == reasons)
        #expect(report.failureExamples[reasons[0]]?.contains("503") == true, "\(report.failureExamples)")
        #expect(asked.load(ordering: .relaxed) == report.checks)
    }

    @Test(arguments: ["http://10.0.0.1:8080", "http://example.com", "https://192.168.1.2"])
    func aFleetTargetsThisMachineOnly(_ base: String) throws {
        let c = FleetConfiguration(
            catalogURL: URL(string: base + "/v1/apps/a/production/catalog.json")!, trustedKeys: [],
            folder: "/nonexistent")
        #expect(throws: BacklotError.self) { try FleetSimulator(configuration: c) }
    }

    @Test func aFolderThatIsNotAFleetsIsNotEmptied() throws {
        let dir = try TemporaryDirectory("fleet-folder")
        defer { dir.remove() }
        _ = try dir.write("fleet/precious.txt", Array("keep me".utf8))
        let c = FleetConfiguration(
            catalogURL: URL(string: "http://127.0.0.1:9/v1/apps/a/production/catalog.json")!, trustedKeys: [],
            folder: dir.at("fleet"))
        #expect(throws: BacklotError.self) { try FleetSimulator(configuration: c).run() }
        #expect(try dir.read("fleet/precious.txt") == Array("keep me".utf8))
    }
}
