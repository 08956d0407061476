import BacklotAgent
import BacklotBasics
import BacklotClient
import BacklotContainer
import BacklotFormat
import BacklotTaskScheduler
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The agent, the app and installers as real processes.
@Suite(.serialized) struct AgentProcessTests {
    /// Runs the test app to the end with `environment` (and BACKLOT_CONTAINER).
    func runTestApp(_ container: String, environment: [String: String]) throws -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: AgentFixture.binaries + "/backlot-test-app")
        var env = ProcessInfo.processInfo.environment
        env["BACKLOT_BACKGROUND_TASK"] = nil
        env["BACKLOT_CONFIG"] = nil
        env["BACKLOT_CONTAINER"] = container
        for (k, v) in environment { env[k] = v }
        p.environment = env
        try p.run()
        p.waitUntilExit()
        return p.terminationStatus
    }

    @Test func theLaunchTheAppRecordsLiftsTheRestrictionsInEveryProcess() throws {
        let f = try AgentFixture()
        let restrictions = DownloadRestrictions(
            downloadAllowance: 1_000, essentialDownloadAllowance: 500, domainAllowList: ["cdn.example.com"])
        let manager = try DownloadManager(containerPath: f.container, restrictions: restrictions, role: .agent) { _ in }
        let elsewhere = URLDownload(identifier: "elsewhere", url: URL(string: "https://downloads.example.org/file")!)
        #expect(throws: BackgroundDownloadError.domainNotAllowed("downloads.example.org")) {
            try manager.scheduleDownload(elsewhere)
        }
        // A launch by the agent for a background task is not the app's launch.
        #expect(try runTestApp(f.container, environment: ["BACKLOT_BACKGROUND_TASK": "com.example.none"]) == 0)
        #expect(manager.remainingAllowance(essential: false) == 1_000)
        #expect(throws: BackgroundDownloadError.domainNotAllowed("downloads.example.org")) {
            try manager.scheduleDownload(elsewhere)
        }
        // The app's own launch (AppPresence.markRunning, as the documented template does, no
        // markAppLaunched call): the agent's manager, in this other process, sees it at once.
        #expect(try runTestApp(f.container, environment: [:]) == 0)
        #expect(
            manager.remainingAllowance(essential: false) == nil && manager.remainingAllowance(essential: true) == nil)
        try manager.scheduleDownload(elsewhere)
        #expect(try manager.fetchCurrentDownloads().map(\.identifier) == ["elsewhere"])
        try manager.cancel(elsewhere)
    }

    @Test func anAppLaunchedInTheBackgroundCannotStartForegroundDownloads() throws {
        let f = try AgentFixture()
        let url = f.server.server.baseURL + "v1/keys/root.json"
        #expect(
            try runTestApp(
                f.container,
                environment: ["BACKLOT_BACKGROUND_TASK": "com.example.none", "BACKLOT_TEST_FOREGROUND_URL": url]) == 0)
        #expect(f.appLog.contains("foreground: refused 51"), "\(f.appLog)")
        #expect(try DownloadManager(containerPath: f.container, role: .agent) { _ in }.fetchCurrentDownloads().isEmpty)
    }

    @Test func promotingADownloadTheAgentIsTransferringTakesItOver() throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Later", seed: 3)
        var g = SeededGenerator(seed: 19)
        let bytes = g.bytes(240_000)
        let tree = f.server.repository.directory.publicTreePath
        try FileSystem.makeDirectory(tree + "/files")
        try Data(bytes).write(to: URL(fileURLWithPath: tree + "/files/slow.bin"))
        // A slow server (30 kB/s): the agent's transfer takes 8 s, so it is under way when the app promotes it.
        chmod(f.server.dir.path, 0o755)
        let cdn = try Nginx(root: tree, workDirectory: f.server.dir.at("nginx"), limitRate: "30k")
        defer { cdn.stop() }
        #expect(
            cdn.waitUntilServing("files/slow.bin"),
            "\((try? String(contentsOfFile: cdn.errorLog, encoding: .utf8)) ?? "")")
        let config = try f.writeConfig([:], withExtension: false)
        let agent = try start(
            AgentFixture.binaries + "/backlot", ["agent", "--container", f.container, "--config", config],
            log: f.server.dir.at("agent.log"))
        defer {
            kill(agent.processIdentifier, SIGTERM)
            agent.waitUntilExit()
        }
        let agentLog = { (try? String(contentsOfFile: f.server.dir.at("agent.log"), encoding: .utf8)) ?? "" }
        #expect(eventually { agentLog().contains("agent: watching") })

        let outcome = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        let app = try DownloadManager(containerPath: f.container) { event in
            switch event {
            case .finished(_, let url):
                let received = Array((try? Data(contentsOf: url)) ?? Data())
                outcome.withLock {
                    $0 =
                        received == bytes
                        ? "finished with the right bytes" : "finished with \(received.count) other bytes"
                }
                done.signal()
            case .failed(_, let error):
                outcome.withLock { $0 = "failed: \(error)" }
                done.signal()
            default: break
            }
        }
        let download = URLDownload(
            identifier: "slow", url: URL(string: cdn.baseURL + "files/slow.bin")!, fileSize: UInt64(bytes.count))
        try app.scheduleDownload(download)  // the running agent runs it
        let partSize = { () -> UInt64 in
            let dir = f.container + "/downloads"
            let parts = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter {
                $0.hasSuffix(".part")
            }
            return parts.compactMap { try? FileSystem.status(dir + "/" + $0)?.size }.max() ?? 0
        }
        #expect(eventually { agentLog().contains("download slow: started") && partSize() >= 30_000 }, "\(agentLog())")
        try app.startForegroundDownload(download)
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(outcome.withLock { $0 } == "finished with the right bytes")
        // The agent stopped its transfer without failing it or posting an outcome.
        #expect(
            !agentLog().contains("download slow: failed") && !agentLog().contains("download slow: finished"),
            "\(agentLog())")
        #expect(try app.fetchCurrentDownloads().isEmpty)
    }

    struct Run {
        let status: Int32
        let out: String
        let err: String
    }

    /// Runs `backlot` to the end.
    func backlot(_ args: [String]) throws -> Run {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: AgentFixture.binaries + "/backlot")
        p.arguments = args
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Run(
            status: p.terminationStatus, out: String(decoding: o, as: UTF8.self),
            err: String(decoding: e, as: UTF8.self))
    }

    /// Starts a long-running process with its output in `log`.
    func start(_ executable: String, _ args: [String], log: String) throws -> Process {
        FileManager.default.createFile(atPath: log, contents: nil)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = args
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        p.standardOutput = h
        p.standardError = h
        try p.run()
        return p
    }

    @Test func sigtermDuringADownloadThenARestartCompletesIt() throws {
        let seed = testSeed()
        print("sigtermDuringADownloadThenARestartCompletesIt: seed \(seed)")
        var rng = SeededGenerator(seed: seed)
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential, chunkSize: 4 << 10)
        let archive = try #require(
            try FileManager.default.attributesOfItem(atPath: try f.server.archivePath("Essential"))[.size] as? UInt64)
        let pack = try PackReader(path: try f.server.archivePath("Essential"))
        let chunks = pack.index.chunks.count
        let digest = pack.header.indexDigest.hex
        let container = try ClientContainer(path: f.container)
        // A slow CDN in front: nginx serving the published tree at 15 kB/s per connection (the
        // installer keeps 4 Range requests in flight: 60 kB/s in all).
        chmod(f.server.dir.path, 0o755)
        let cdn = try Nginx(
            root: f.server.repository.directory.publicTreePath, workDirectory: f.server.dir.at("nginx"),
            limitRate: "15k")
        defer { cdn.stop() }
        #expect(
            cdn.waitUntilServing("v1/keys/root.json"),
            "\((try? String(contentsOfFile: cdn.errorLog, encoding: .utf8)) ?? "")")
        let slow = try f.writeConfig(
            [
                "BacklotCatalogURL": cdn.baseURL + "v1/apps/\(f.server.app)/internal/catalog.json",
                "BacklotMaximumRangeBytes": 65_536,
            ], withExtension: false, name: "slow.json")
        try AgentStore(containerPath: f.container).enqueue(.install, bypassBudget: false)
        let agent = try start(
            AgentFixture.binaries + "/backlot", ["agent", "--container", f.container, "--config", slow],
            log: f.server.dir.at("agent1.log"))
        let log1 = { (try? String(contentsOfFile: f.server.dir.at("agent1.log"), encoding: .utf8)) ?? "" }
        #expect(eventually { log1().contains("agent: watching") })
        // Stop it at a point drawn from the seed: once 10 to 50 % of the chunks are verified and written.
        let stopAt = max(1, chunks * Int(10 + rng.next() % 41) / 100)
        #expect(eventually { container.verifiedChunkCount(forDigest: digest) >= stopAt })
        let kept = container.verifiedChunkCount(forDigest: digest)
        kill(agent.processIdentifier, SIGTERM)
        agent.waitUntilExit()
        #expect(agent.terminationReason == .exit && agent.terminationStatus == 0)
        #expect(try f.installed().isEmpty)
        #expect(try AgentStore(containerPath: f.container).queued().map(\.request) == [.install])
        #expect(container.verifiedChunkCount(forDigest: digest) >= kept)  // nothing verified was thrown away

        let fast = try f.writeConfig([:], withExtension: false, name: "fast.json")
        let again = try start(
            AgentFixture.binaries + "/backlot", ["agent", "--container", f.container, "--config", fast],
            log: f.server.dir.at("agent2.log"))
        defer {
            kill(again.processIdentifier, SIGKILL)
            again.waitUntilExit()
        }
        #expect(eventually { (try? f.installed()) == ["Essential"] })
        // The line is written once the install has returned, a moment after it is visible.
        #expect(
            eventually {
                ((try? String(contentsOfFile: f.server.dir.at("agent2.log"), encoding: .utf8)) ?? "").contains(
                    "pack Essential: version")
            })
        let log = try String(contentsOfFile: f.server.dir.at("agent2.log"), encoding: .utf8)
        let line = try #require(log.split(separator: "\n").first { $0.contains("pack Essential: version") })
        let downloaded = try #require(UInt64(line.split(separator: " ").reversed().dropFirst(2).first ?? ""))
        #expect(downloaded < archive, "\(log1())")  // what arrived before SIGTERM was kept
        #expect(log1().contains("waiting (stopping; verified chunks are kept)"))
        #expect(try ClientContainer.verify(path: f.container).isEmpty)
    }

    @Test func sigtermRightAfterStartStillStopsTheAgent() throws {
        let f = try AgentFixture()
        let config = try f.writeConfig(withExtension: false)
        for i in 0..<5 {
            let agent = try start(
                AgentFixture.binaries + "/backlot", ["agent", "--container", f.container, "--config", config],
                log: f.server.dir.at("a\(i).log"))
            usleep(UInt32(i) * 2_000)
            kill(agent.processIdentifier, SIGTERM)
            let stopped = eventually { !agent.isRunning }
            if !stopped { kill(agent.processIdentifier, SIGKILL) }
            agent.waitUntilExit()
            #expect(stopped, "attempt \(i): SIGTERM was lost")
            #expect(
                agent.terminationStatus == 0 || agent.terminationStatus == SIGTERM || agent.terminationStatus == 143)
        }
    }

    @Test func theAppAndTheAgentRaceOnFinishedDownloads() throws {
        let seed = testSeed()
        print("theAppAndTheAgentRaceOnFinishedDownloads: seed \(seed)")
        var rng = SeededGenerator(seed: seed)
        let f = try AgentFixture()
        try f.server.publish(id: "Later", seed: 3)
        let config = try f.writeConfig()
        let url = f.server.server.baseURL + "v1/keys/root-1.json"
        let agent = try start(
            AgentFixture.binaries + "/backlot", ["agent", "--container", f.container, "--config", config],
            log: f.server.dir.at("agent.log"))
        defer {
            kill(agent.processIdentifier, SIGKILL)
            agent.waitUntilExit()
        }
        let agentLog = { (try? String(contentsOfFile: f.server.dir.at("agent.log"), encoding: .utf8)) ?? "" }
        #expect(eventually { agentLog().contains("agent: watching") })
        let rounds = 4
        for i in 0..<rounds {
            // Each round's file has arrived somewhere (or is posted for the app) before the next.
            if i > 0 {
                #expect(eventually { agentLog().contains("download race-\(i - 1): finished") })
            }
            try f.extensionSettings(["downloads": [["identifier": "race-\(i)", "url": url]]])
            let delay = Double(rng.next() % 300) / 1000
            let listener = Thread {
                Thread.sleep(forTimeInterval: delay)
                let p = Process()
                p.executableURL = URL(fileURLWithPath: AgentFixture.binaries + "/backlot-test-app")
                p.arguments = ["listen", f.container, "0.3"]
                try? p.run()
                p.waitUntilExit()
            }
            listener.start()
            let r = try backlot(["notify", "--container", f.container, "--app-update", "--wait"])
            #expect(r.status == 0, "\(r.err)")
        }
        #expect(eventually { agentLog().contains("download race-\(rounds - 1): finished") })
        Thread.sleep(forTimeInterval: 0.4)  // the last listener has stopped
        // Outcomes posted for an app that stopped listening are delivered the next time it listens.
        let last = try start(
            AgentFixture.binaries + "/backlot-test-app", ["listen", f.container, "1"], log: f.server.dir.at("last.log"))
        last.waitUntilExit()
        for i in 0..<rounds {
            let app = FileManager.default.fileExists(atPath: f.container + "/app-received/race-\(i)")
            let ext = FileManager.default.fileExists(atPath: f.container + "/extension-received/race-\(i)")
            #expect(app != ext, "race-\(i): app \(app), extension \(ext) (seed \(seed))\n\(agentLog())")
        }
    }

    @Test func aDueTaskLaunchesTheAppInTheBackground() async throws {
        let f = try AgentFixture()
        let config = try f.writeConfig(
            [
                "BacklotAppExecutable": AgentFixture.binaries + "/backlot-test-app",
                "BGTaskSchedulerPermittedIdentifiers": ["com.example.refresh", "com.example.clean"],
                "BacklotRefreshTaskBudget": 5, "BacklotTaskExpirationGrace": 1,
            ], withExtension: false)
        let agent = try f.agent(config: config)
        // The app submitted these before it was closed.
        let app = try TaskScheduler(
            configuration: AgentConfiguration(path: config, containerPath: f.container).scheduler)
        try app.submit(AppRefreshTaskRequest(identifier: "com.example.refresh"))
        let later = ProcessingTaskRequest(identifier: "com.example.clean")
        later.earliestBeginDate = Date(timeIntervalSinceNow: 3600)
        try app.submit(later)
        await agent.round()
        #expect(eventually { app.history(forTaskWithIdentifier: "com.example.refresh").map(\.outcome) == [.success] })
        #expect(eventually { f.appLog.contains("exit success") })
        #expect(f.appLog.first == "ran com.example.refresh (refresh)")
        #expect(app.pendingTaskRequests().map(\.identifier) == ["com.example.clean"])  // not due yet

        // An app whose task never completes and sets no expiration handler: marked failed at its budget.
        try JSONSerialization.data(withJSONObject: ["task": "hang"]).write(
            to: URL(fileURLWithPath: f.container + "/test-app.json"))
        try app.submit(AppRefreshTaskRequest(identifier: "com.example.refresh"))
        // The agent's rounds launch it as soon as the previous launch is over.
        for _ in 0..<100 where app.history(forTaskWithIdentifier: "com.example.refresh").count < 2 {
            await agent.round()
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        #expect(
            eventually {
                app.history(forTaskWithIdentifier: "com.example.refresh").map(\.outcome) == [.success, .expired]
            }, "\(app.history(forTaskWithIdentifier: "com.example.refresh")) \(f.appLog) \(f.lines.all)")

        // While the app runs, the agent leaves due tasks to it; once it has quit, the agent launches it.
        try JSONSerialization.data(withJSONObject: ["task": "complete"]).write(
            to: URL(fileURLWithPath: f.container + "/test-app.json"))
        var presence: AppPresence? = try AppPresence.markRunning(containerPath: f.container, countsAsLaunch: false)
        try app.submit(ProcessingTaskRequest(identifier: "com.example.clean"))  // replaces the one not due for an hour
        for _ in 0..<5 {
            await agent.round()
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        #expect(app.isPending("com.example.clean"))
        #expect(app.history(forTaskWithIdentifier: "com.example.clean").isEmpty)
        withExtendedLifetime(presence) {}
        presence = nil
        for _ in 0..<100 where app.history(forTaskWithIdentifier: "com.example.clean").isEmpty {
            await agent.round()
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        #expect(eventually { app.history(forTaskWithIdentifier: "com.example.clean").map(\.outcome) == [.success] })
        #expect(f.appLog.contains("ran com.example.clean (processing)"))
    }

    @Test(arguments: [
        (#"{"BacklotExtensionTimeLimt": 5}"#, "BacklotExtensionTimeLimt", "did you mean BacklotExtensionTimeLimit"),
        (#"{"BacklotExtensionTimeLimit": "ten"}"#, "BacklotExtensionTimeLimit", "positive number of seconds"),
        (#"{"BacklotTrustedKey": null}"#, "BacklotTrustedKey", "null"),
        (
            #"{"BAInitialDownloadRestrictions": {"BADownloadAllowance": "lots"}}"#, "BAInitialDownloadRestrictions",
            "invalid"
        ),
        (
            #"{"BGTaskSchedulerPermittedIdentifiers": "com.example.refresh"}"#, "BGTaskSchedulerPermittedIdentifiers",
            "array of strings"
        ),
    ])
    func aBadConfigurationNamesTheKey(extra: String, key: String, says: String) throws {
        let f = try AgentFixture()
        let base = try f.writeConfig(withExtension: false)
        var object =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: base))) as! [String: Any]
        let patch = try JSONSerialization.jsonObject(with: Data(extra.utf8)) as! [String: Any]
        for (k, v) in patch { object[k] = v }
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: base))
        let r = try backlot(["agent", "--container", f.container, "--config", base, "--once"])
        #expect(r.status == 2)
        #expect(r.err.contains(key) && r.err.contains(says), "\(r.err)")
    }

    @Test func anInfoPlistIsAConfigurationToo() throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
        try FileManager.default.copyItem(
            atPath: f.server.repository.directory.publicKeyPath, toPath: f.server.dir.at("root.pub"))
        let plist = f.server.dir.at("Info.plist")
        try """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict>
          <key>CFBundleIdentifier</key><string>com.example.game</string>
          <key>BacklotCatalogURL</key><string>\(f.server.catalogURL().absoluteString)</string>
          <key>BacklotTrustedKey</key><string>root.pub</string>
          <key>BAInitialDownloadRestrictions</key><dict>
            <key>BADownloadAllowance</key><integer>100000000</integer>
            <key>BAEssentialDownloadAllowance</key><integer>100000000</integer>
            <key>BADownloadDomainAllowList</key><array><string>127.0.0.1</string></array>
          </dict>
          <key>BAEssentialMaxInstallSize</key><integer>100000000</integer>
          <key>BGTaskSchedulerPermittedIdentifiers</key><array><string>com.example.refresh</string></array>
        </dict></plist>
        """.write(toFile: plist, atomically: true, encoding: .utf8)
        // No agent runs: the installer's notify runs the event itself.
        let r = try backlot(["notify", "--container", f.container, "--app-install", "--config", plist])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("install event done: packs: Essential"))
        #expect(try f.installed() == ["Essential"])
        // A Backlot key misspelt in an Info.plist is refused; other apps' keys are not.
        try String(contentsOfFile: plist, encoding: .utf8).replacingOccurrences(
            of: "<key>BacklotTrustedKey</key>", with: "<key>BacklotTrustedKeys</key>"
        )
        .write(toFile: plist, atomically: true, encoding: .utf8)
        let bad = try backlot(["notify", "--container", f.container, "--app-update", "--config", plist])
        #expect(bad.status == 2 && bad.err.contains("BacklotTrustedKeys"))
    }

    @Test func notifyWithoutAnAgentOrAConfigurationWaitsForTheAgent() throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
        let r = try backlot(["notify", "--container", f.container, "--app-install"])
        #expect(r.status == 0 && r.out.contains("runs when `backlot agent` starts"))
        #expect(try f.installed().isEmpty)
        let config = try f.writeConfig(withExtension: false)
        let once = try backlot(["agent", "--container", f.container, "--config", config, "--once"])
        #expect(once.status == 0, "\(once.err)")
        #expect(try f.installed() == ["Essential"])
        // simulate bypasses the budget and uses the configuration the agent recorded.
        let s = try backlot(["simulate", "--container", f.container, "--periodic"])
        #expect(s.status == 0 && s.out.contains("periodic event done"), "\(s.out) \(s.err)")
        let status = try backlot(["agent", "status", "--container", f.container, "--json"])
        #expect(status.status == 0, "\(status.err)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(status.out.utf8)) as? [String: Any])
        #expect(json["agentRunning"] as? Bool == false)
        let events = try #require(json["events"] as? [[String: Any]])
        #expect(events.map { $0["request"] as? String } == ["periodic", "install"])
        #expect(events.allSatisfy { $0["state"] as? String == "done" })
        let usage = try backlot(["simulate", "--container", f.container, "--app-install", "--periodic"])
        #expect(usage.status == 2 && usage.err.contains("exactly one of"))
    }
}

/// The seed of a test's random choices: BACKLOT_TEST_SEED replays a failure.
func testSeed() -> UInt64 {
    ProcessInfo.processInfo.environment["BACKLOT_TEST_SEED"].flatMap(UInt64.init)
        ?? UInt64.random(in: 1...UInt64(UInt32.max))
}
