import BacklotAgent
import BacklotBasics
import BacklotClient
import BacklotExtension
import BacklotFormat
import BacklotTaskScheduler
import BacklotTestSupport
import Foundation
import Testing

/// The agent in this process, against a real server, with the real extension executable.
@Suite(.serialized) struct AgentEventTests {
    func publishAll(_ f: AgentFixture) throws {
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
        try f.server.publish(id: "Extras", seed: 2, policy: AgentFixture.prefetch)
        try f.server.publish(id: "Later", seed: 3)
        try f.server.publish(id: "UpdateOnly", seed: 4, policy: AgentFixture.updateOnly)
    }

    @Test func anInstallFetchesEssentialThenPrefetchPacksAndAsksTheExtension() async throws {
        let f = try AgentFixture()
        try publishAll(f)
        try f.extensionSettings([:])
        let agent = try f.agent()
        let seq = try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        let event = try #require(try agent.store.event(seq))
        #expect(event.state == "done")
        #expect(try f.installed() == ["Essential", "Extras"])
        let log = f.extensionLog
        #expect(
            log.filter { $0.hasPrefix("shouldDownload") } == [
                "shouldDownload Essential essential", "shouldDownload Extras prefetch",
            ])
        #expect(log.contains("downloads install manifest=read mode=444 remaining=nil"))
        // An update event fetches what subsequentUpdate lists, and the essential pack is already there.
        try agent.store.enqueue(.update, bypassBudget: false)
        await agent.runQueuedEvents()
        #expect(try f.installed() == ["Essential", "Extras", "UpdateOnly"])
        #expect(f.extensionLog.contains { $0.hasPrefix("downloads update") })
    }

    @Test func theExtensionMayDeclineCandidates() async throws {
        let f = try AgentFixture()
        try publishAll(f)
        try f.extensionSettings(["decline": ["Extras"]])
        let agent = try f.agent()
        let seq = try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        #expect(try f.installed() == ["Essential"])
        #expect(try agent.store.event(seq)?.detail.contains("declined by the extension: Extras") == true)
    }

    @Test func prefetchWaitsForAnUnmeteredNetworkAndEverythingWaitsForANetwork() async throws {
        let f = try AgentFixture()
        try publishAll(f)
        try f.extensionSettings([:])
        let agent = try f.agent()
        f.conditions.set(DeviceConditions(networkAvailable: false))
        let seq = try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        #expect(try f.installed().isEmpty)
        #expect(try agent.store.event(seq)?.state == "queued")
        f.conditions.set(DeviceConditions(networkAvailable: true, networkMetered: true))
        await agent.runQueuedEvents()
        #expect(try f.installed() == ["Essential"])  // essential packs do not wait for an unmetered network
        #expect(try agent.store.event(seq)?.state == "queued")
        f.conditions.set(DeviceConditions(networkAvailable: true, networkMetered: false))
        await agent.runQueuedEvents()
        #expect(try f.installed() == ["Essential", "Extras"])
        #expect(try agent.store.event(seq)?.state == "done")
        // downloads(for:) ran once for the event, not once per attempt.
        #expect(f.extensionLog.filter { $0.hasPrefix("downloads install") }.count == 1)
    }

    @Test func aDownloadStopsWhenTheNetworkGoesAndGoesOnWhenItReturns() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential, chunkSize: 4 << 10)
        chmod(f.server.dir.path, 0o755)
        let cdn = try Nginx(
            root: f.server.repository.directory.publicTreePath, workDirectory: f.server.dir.at("nginx"),
            limitRate: "15k")  // per connection; the installer keeps 4 Range requests in flight
        defer { cdn.stop() }
        #expect(cdn.waitUntilServing("v1/keys/root.json"))
        let agent = try f.agent(
            config: try f.writeConfig(
                [
                    "BacklotCatalogURL": cdn.baseURL + "v1/apps/\(f.server.app)/internal/catalog.json",
                    "BacklotMaximumRangeBytes": 65_536,
                ], withExtension: false))
        let seq = try agent.store.enqueue(.install, bypassBudget: false)
        let running = Task { await agent.runQueuedEvents() }
        let digest = try PackReader(path: try f.server.archivePath("Essential")).header.indexDigest.hex
        let container = try ClientContainer(path: f.container)
        // The first verified chunk (the whole pack takes tens of seconds at 4 × 15 kB/s).
        #expect(eventually(seconds: 120) { container.verifiedChunkCount(forDigest: digest) > 0 })
        f.conditions.set(DeviceConditions(networkAvailable: false))
        await running.value
        #expect(try agent.store.event(seq)?.state == "queued")
        #expect(try f.installed().isEmpty)
        #expect(f.lines.all.contains("event install: waiting (no network)"), "\(f.lines.all)")
        f.conditions.set(DeviceConditions(networkAvailable: true))
        await agent.runQueuedEvents()
        #expect(try agent.store.event(seq)?.state == "done")
        #expect(try f.installed() == ["Essential"])
        #expect(try ClientContainer.verify(path: f.container).isEmpty)
    }

    @Test func aHangingExtensionIsKilledAtItsLimit() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
        try f.extensionSettings(["mode": "hang"])
        let agent = try f.agent(config: try f.writeConfig(["BacklotExtensionTimeLimit": 1]))
        let seq = try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        let event = try #require(try agent.store.event(seq))
        #expect(event.state == "done")
        #expect(event.detail.contains("ran past its limit of 1 s and was killed"))
        #expect(try f.installed() == ["Essential"])  // shouldDownload's default: every candidate
        #expect(try agent.store.extensionRuntime(on: Date()) >= 2)  // two calls, each killed at 1 s
    }

    @Test func aCrashingExtensionIsReported() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
        try f.extensionSettings(["mode": "crash"])
        let agent = try f.agent()
        let seq = try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        let detail = try #require(try agent.store.event(seq)).detail
        #expect(detail.contains("was killed by signal 6"))
        #expect(try f.installed() == ["Essential"])
    }

    @Test func theDailyBudgetIsKeptButSimulateBypassesIt() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Later", seed: 3)
        try f.extensionSettings(["mode": "hang"])
        let agent = try f.agent(
            config: try f.writeConfig(["BacklotExtensionTimeLimit": 60, "BacklotExtensionDailyBudget": 1]))
        let first = try agent.store.enqueue(.periodic, bypassBudget: false)
        await agent.runQueuedEvents()
        // The budget's 1 s was the limit, not the call's 60 s.
        #expect(try agent.store.event(first)?.detail.contains("ran past its limit of 1 s") == true)
        try f.extensionSettings([:])
        let second = try agent.store.enqueue(.periodic, bypassBudget: false)
        await agent.runQueuedEvents()
        #expect(try agent.store.event(second)?.state == "queued")  // waits for the budget to renew
        #expect(f.lines.all.contains { $0.contains("waiting (the extension's daily budget is used up") })
        let simulated = try agent.store.enqueue(.periodic, bypassBudget: true)
        await agent.runQueuedEvents()
        #expect(try agent.store.event(simulated)?.state == "done")
        #expect(try agent.store.event(second)?.state == "queued")
        #expect(try agent.store.event(simulated)?.detail.contains("extension:") == false)
        #expect(f.extensionLog.filter { $0.hasPrefix("downloads periodic") }.count == 2)
    }

    @Test func periodicRequestsMayNotReturnEssentialDownloads() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Later", seed: 3)
        let url = f.server.server.baseURL + "v1/keys/root-1.json"
        let size = try #require(
            try FileManager.default.attributesOfItem(
                atPath: f.server.repository.directory.publicTreePath + "/v1/keys/root-1.json")[.size] as? Int)
        try f.extensionSettings([
            "downloads": [
                ["identifier": "essential-file", "url": url, "fileSize": size, "essential": true],
                ["identifier": "extra-file", "url": url, "fileSize": size],
            ]
        ])
        let agent = try f.agent()
        let seq = try agent.store.enqueue(.periodic, bypassBudget: false)
        await agent.round()
        let detail = try #require(try agent.store.event(seq)).detail
        #expect(detail.contains("refused: essential-file: a periodic request may only return non-essential downloads"))
        #expect(detail.contains("scheduled: extra-file"))
    }

    @Test func schedulingIsRefusedWhileDownloadsForRuns() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Later", seed: 3)
        try f.extensionSettings(["trySchedule": true])
        let agent = try f.agent()
        try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        #expect(
            f.extensionLog.contains {
                $0.hasPrefix("schedule during downloads(for:): refused:")
                    && $0.contains("can't be scheduled while the downloader extension answers")
            })
        // Afterwards the app may schedule again.
        let manager = try DownloadManager(containerPath: f.container) { _ in }
        try manager.scheduleDownload(
            URLDownload(identifier: "later", url: URL(string: f.server.server.baseURL + "v1/keys/root-1.json")!))
        manager.waitUntilIdle()
    }

    @Test func foregroundDownloadsAreRefusedInTheExtensionAndTheAgent() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Later", seed: 3)
        try f.extensionSettings(["tryForeground": true])
        let agent = try f.agent()
        try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        // The extension's process: Apple's callFromExtensionNotAllowed (50).
        #expect(f.extensionLog.contains { $0.hasPrefix("foreground from the extension: refused 50:") })
        // The agent's own manager is a background process: callFromInactiveProcessNotAllowed (51).
        let url = URL(string: f.server.server.baseURL + "v1/keys/root-1.json")!
        let agentSide = try DownloadManager(containerPath: f.container, role: .agent) { _ in }
        #expect { try agentSide.startForegroundDownload(URLDownload(identifier: "fg", url: url)) } throws: { e in
            guard let e = e as? BackgroundDownloadError, case .callFromInactiveProcessNotAllowed("fg") = e else {
                return false
            }
            return e.code == 51
        }
    }

    @Test func finishedDownloadsGoToTheExtensionWhenTheAppIsNotListeningAndToTheAppWhenItIs() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Later", seed: 3)
        let url = f.server.server.baseURL + "v1/keys/root-1.json"
        try f.extensionSettings([
            "downloads": [["identifier": "one", "url": url], ["identifier": "gone", "url": url + ".missing"]]
        ])
        let agent = try f.agent()
        try agent.store.enqueue(.install, bypassBudget: false)
        await agent.round()
        #expect(eventually { f.extensionLog.contains("finished one moved=true") })
        #expect(eventually { f.extensionLog.contains { $0.hasPrefix("failed gone: ") && $0.contains("404") } })
        #expect(FileManager.default.fileExists(atPath: f.container + "/extension-received/one"))

        // Now the app listens: the next outcome is the app's, and the extension is not woken.
        let received = ReceivedFiles()
        let app = try DownloadManager(containerPath: f.container) { event in
            if case .finished(let d, _) = event { received.add(d.identifier) }
        }
        try app.startListening(pollInterval: 0.02)
        try f.extensionSettings(["downloads": [["identifier": "two", "url": url]]])
        try agent.store.enqueue(.update, bypassBudget: false)
        await agent.round()
        #expect(eventually { received.all == ["two"] })
        try app.stopListening()
        #expect(!f.extensionLog.contains { $0.hasPrefix("finished two") })
    }

    @Test func aURLDownloadPausesWhileItsServerCannotBeReachedAndGoesOnAfter() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Later", seed: 3)
        // Nothing listens there yet: held (bound, never listening: connections are refused) until
        // nginx starts on it, outside the ephemeral range so that nothing else takes it meanwhile.
        let reserved = try FreePort.reserved()
        let port = reserved.port
        try f.extensionSettings([
            "downloads": [["identifier": "later-file", "url": "http://127.0.0.1:\(port)/file.bin"]]
        ])
        let agent = try f.agent()
        try agent.store.enqueue(.install, bypassBudget: false)
        await agent.round()
        #expect(
            eventually { f.lines.all.contains("download later-file: paused (the connection failed); it goes on later") }
        )
        let manager = try DownloadManager(containerPath: f.container) { _ in }
        #expect(try manager.fetchCurrentDownloads().map(\.identifier) == ["later-file"])
        #expect(!f.extensionLog.contains { $0.hasPrefix("failed later-file") })
        // The server comes up; the next round resumes the download.
        chmod(f.server.dir.path, 0o755)
        try FileManager.default.createDirectory(atPath: f.server.dir.at("www"), withIntermediateDirectories: true)
        try Data(repeating: 7, count: 5000).write(to: URL(fileURLWithPath: f.server.dir.at("www/file.bin")))
        reserved.release()
        let nginx = try Nginx(root: f.server.dir.at("www"), workDirectory: f.server.dir.at("nginx"), port: port)
        defer { nginx.stop() }
        #expect(
            nginx.waitUntilServing("file.bin"),
            "\((try? String(contentsOfFile: nginx.errorLog, encoding: .utf8)) ?? "")")
        // The next attempt comes after a back-off (2 s after the first failure).
        for _ in 0..<100 where !f.extensionLog.contains("finished later-file moved=true") {
            await agent.round()
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        #expect(f.extensionLog.contains("finished later-file moved=true"))
        #expect(try manager.fetchCurrentDownloads().isEmpty)
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: f.container + "/extension-received/later-file")).count == 5000)
    }

    @Test func whatTheAppScheduledBeforeItClosedTheAgentDownloads() async throws {
        let f = try AgentFixture()
        try f.extensionSettings([:])
        let agent = try f.agent()
        // The app schedules a download and quits; with an agent running, the app does not run it.
        let received = ReceivedFiles()
        let app = try DownloadManager(containerPath: f.container) { event in
            if case .finished(let d, _) = event { received.add(d.identifier) }
        }
        try app.scheduleDownload(
            URLDownload(identifier: "from-the-app", url: URL(string: f.server.server.baseURL + "v1/keys/root-1.json")!))
        app.waitUntilIdle()
        #expect(try app.fetchCurrentDownloads().map(\.identifier) == ["from-the-app"])
        await agent.round()
        #expect(eventually { f.extensionLog.contains("finished from-the-app moved=true") })
        #expect(received.all.isEmpty)
    }

    @Test func installSizeCapsApplyWithoutPreLaunchRestrictions() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Later", seed: 3)
        let url = f.server.server.baseURL + "v1/keys/root-1.json"
        try f.extensionSettings([
            "downloads": [
                ["identifier": "small", "url": url, "fileSize": 100],
                ["identifier": "big", "url": url, "fileSize": 5000],
            ]
        ])
        let agent = try f.agent(config: try f.writeConfig(["BAMaxInstallSize": 1000]))
        let seq = try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        let detail = try #require(try agent.store.event(seq)).detail
        #expect(detail.contains("scheduled: small"))
        #expect(
            detail.contains("big: the download needs 5000 bytes but only 1000 remain under the maximum install size"),
            "\(detail)")
        #expect(f.extensionLog.contains("downloads install manifest=read mode=444 remaining=nil"))
    }

    @Test func aFinishedDownloadTheExtensionCannotTakeWaitsForTheApp() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Later", seed: 3)
        try f.extensionSettings([
            "downloads": [["identifier": "orphan", "url": f.server.server.baseURL + "v1/keys/root-1.json"]],
            "crashOnFinished": true,
        ])
        let agent = try f.agent()
        try agent.store.enqueue(.install, bypassBudget: false)
        await agent.round()
        agent.drain()
        #expect(f.extensionLog.contains("finished orphan: crashing"))
        #expect(f.lines.all.contains { $0.hasPrefix("download orphan: finished; the extension could not take it") })
        let received = ReceivedFiles()
        let app = try DownloadManager(containerPath: f.container) { event in
            if case .finished(let d, let url) = event, FileManager.default.fileExists(atPath: url.path) {
                received.add(d.identifier)
            }
        }
        try app.startListening(pollInterval: 0.02)
        #expect(eventually { received.all == ["orphan"] })
        try app.stopListening()
    }

    @Test func aHandOffInterruptedByACrashGoesToTheAppAtTheNextStart() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Later", seed: 3)
        let url = URL(string: f.server.server.baseURL + "v1/keys/root-1.json")!
        // What a crashed agent leaves: an outcome kept for the extension, never completed.
        do {
            let crashed = try DownloadManager(containerPath: f.container, role: .agent) { _ in }
            try FileManager.default.createDirectory(
                atPath: f.container + "/downloads", withIntermediateDirectories: true)
            try Data([1, 2, 3]).write(to: URL(fileURLWithPath: f.container + "/downloads/x.file"))
            try crashed.withExclusiveControl {
                _ = try crashed.postToApp(
                    .finished(
                        URLDownload(identifier: "interrupted", url: url),
                        URL(fileURLWithPath: f.container + "/downloads/x.file")),
                    reservedForExtension: true)
            }
        }
        let received = ReceivedFiles()
        let app = try DownloadManager(containerPath: f.container) { event in
            if case .finished(let d, _) = event { received.add(d.identifier) }
        }
        try app.startListening(pollInterval: 0.02)
        usleep(200_000)
        #expect(received.all.isEmpty)  // reserved for the extension: not the app's
        _ = try f.agent()  // the next start releases it
        #expect(eventually { received.all == ["interrupted"] })
        try app.stopListening()
    }

    @Test func theExtensionIsToldWhatItMayStillDownloadBeforeTheFirstLaunch() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Later", seed: 3)
        try f.extensionSettings([:])
        let agent = try f.agent(
            config: try f.writeConfig([
                "BAInitialDownloadRestrictions": [
                    "BADownloadAllowance": 1_000_000, "BAEssentialDownloadAllowance": 500_000,
                    "BADownloadDomainAllowList": ["127.0.0.1"],
                ]
            ]))
        try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        // The catalog the agent fetched counts against the allowance (as Apple counts the manifest).
        let catalogBytes = try #require(try FileManager.default.attributesOfItem(atPath: catalogFile(f))[.size] as? Int)
        #expect(
            f.extensionLog.contains("downloads install manifest=read mode=444 remaining=\(1_000_000 - catalogBytes)"),
            "\(f.extensionLog)")
    }

    /// The published catalog of the fixture's channel, as the server sends it.
    func catalogFile(_ f: AgentFixture) -> String {
        let url = f.server.catalogURL().absoluteString
        return f.server.repository.directory.publicTreePath + "/" + url.dropFirst(f.server.server.baseURL.count)
    }

    @Test func everythingBeforeTheFirstLaunchCountsAndEveryHostMustBeAllowed() async throws {
        let f = try AgentFixture()
        try publishAll(f)
        let restrictions: [String: Any] = [
            "BADownloadAllowance": 1_000_000, "BAEssentialDownloadAllowance": 500,
            "BADownloadDomainAllowList": ["127.0.0.1"],
        ]
        let agent = try f.agent(
            config: try f.writeConfig(["BAInitialDownloadRestrictions": restrictions], withExtension: false))
        let seq = try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        let detail = try #require(try agent.store.event(seq)).detail
        // The essential pack is larger than its allowance: refused with Apple's 203, not fetched.
        #expect(detail.contains("Essential: ") && detail.contains("203"), "\(detail)")
        #expect(try f.installed() == ["Extras"])
        // The prefetch pack's bytes and each catalog fetch counted.
        let probe = try DownloadManager(
            containerPath: f.container, restrictions: agent.configuration.restrictions, role: .agent
        ) { _ in }
        let left = try #require(probe.remainingAllowance(essential: false))
        let catalogBytes = try #require(try FileManager.default.attributesOfItem(atPath: catalogFile(f))[.size] as? Int)
        #expect(left <= 1_000_000 - 2 * UInt64(catalogBytes) - 1, "\(left)")
        #expect(probe.remainingAllowance(essential: true) == 500)

        // A catalog host off the allow list is not contacted before the first launch (202).
        let g = try AgentFixture()
        try publishAll(g)
        let other = try g.agent(
            config: try g.writeConfig(
                [
                    "BAInitialDownloadRestrictions": [
                        "BADownloadAllowance": 1_000_000, "BAEssentialDownloadAllowance": 1_000_000,
                        "BADownloadDomainAllowList": ["cdn.example.com"],
                    ]
                ], withExtension: false))
        let s2 = try other.store.enqueue(.install, bypassBudget: false)
        await other.runQueuedEvents()
        let failed = try #require(try other.store.event(s2))
        #expect(failed.detail.contains("127.0.0.1 is not on the download domain allow list"), "\(failed.detail)")
        #expect(try g.installed().isEmpty)
    }

    @Test func anAppClipContainerHasNoEssentialPhase() async throws {
        let f = try AgentFixture()
        try publishAll(f)
        let agent = try f.agent(
            config: try f.writeConfig(
                ["BacklotIsAppClip": true, "BGTaskSchedulerPermittedIdentifiers": ["x"]], withExtension: false))
        try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        #expect(try f.installed() == ["Extras"])
        #expect { try agent.scheduler.submit(AppRefreshTaskRequest(identifier: "x")) } throws: { e in
            (e as? TaskScheduler.Error)?.code == .unavailable
        }
        #expect(!agent.scheduler.register(forTaskWithIdentifier: "x", using: nil) { _ in })
    }

    @Test func periodicChecksAreQueuedAtTheIntervalTheAppsUseCallsFor() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Later", seed: 3)
        let clock = ManualClock()
        let config = try AgentConfiguration(
            path: try f.writeConfig(["BacklotPeriodicCheckInterval": 100], withExtension: false),
            containerPath: f.container)
        let agent = try Agent(containerPath: f.container, configuration: config, conditions: f.conditions, clock: clock)
        func periodicEvents() throws -> Int { try agent.store.recent(100).filter { $0.request == .periodic }.count }
        // Each wait is the interval spread by the factor drawn when the last check was marked (±20 %).
        func factor() throws -> Double { try #require(try agent.store.value("periodicFactor").flatMap(Double.init)) }
        await agent.round()  // the first round starts the clock
        clock.advance(by: 800 * (try factor()) - 1)
        await agent.round()
        #expect(try periodicEvents() == 0)  // never launched: every 8 × 100 s
        clock.advance(by: 1.5)  // past the due time (a whole second: no rounding of the drawn factor decides)
        await agent.round()
        #expect(try periodicEvents() == 1)
        // Used on 5 days of the last week: every 100 s.
        for _ in 0..<5 {
            agent.scheduler.recordAppLaunch()
            clock.advance(by: 86_400)
        }
        await agent.round()
        #expect(try periodicEvents() == 2)
        clock.advance(by: 100 * (try factor()) - 1)
        await agent.round()
        #expect(try periodicEvents() == 2)
        clock.advance(by: 1.5)
        await agent.round()
        #expect(try periodicEvents() == 3)
    }

    @Test func thePeriodicCheckComesLessOftenForAppsLittleUsed() {
        let policy = PeriodicCheckPolicy(baseInterval: 3600)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let daily = (0..<7).map { now.addingTimeInterval(-Double($0) * 86_400) }
        #expect(policy.interval(launches: daily, now: now) == 3600)
        #expect(policy.interval(launches: [now.addingTimeInterval(-3 * 86_400)], now: now) == 7200)
        #expect(policy.interval(launches: [now.addingTimeInterval(-20 * 86_400)], now: now) == 14_400)
        #expect(policy.interval(launches: [], now: now) == 28_800)
    }
}

final class ReceivedFiles: @unchecked Sendable {
    private let lock = NSLock()
    private var ids: [String] = []
    func add(_ id: String) {
        lock.lock()
        ids.append(id)
        lock.unlock()
    }
    var all: [String] {
        lock.lock()
        defer { lock.unlock() }
        return ids
    }
}

/// Polls `condition` every 10 ms for up to `seconds` (a loaded machine may need the whole of it).
func eventually(seconds: Int = 60, _ condition: () -> Bool) -> Bool {
    for _ in 0..<(seconds * 100) {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}
