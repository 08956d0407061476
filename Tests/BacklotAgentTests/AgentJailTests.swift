import BacklotAgent
import BacklotBasics
import BacklotClient
import BacklotContainer
import BacklotExtension
import BacklotFormat
import BacklotJSON
import BacklotTaskScheduler
import BacklotTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Whether a process is alive (a zombie counts as ended).
func isAlive(_ pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
    else { return false }
    return !stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
}

/// Seconds the extension was charged in all (today and the days on either side, for faked clocks).
func chargedRuntime(_ store: AgentStore) throws -> TimeInterval {
    try [-86_400.0, 0, 86_400].reduce(0) { $0 + (try store.extensionRuntime(on: Date().addingTimeInterval($1))) }
}

/// The extension and background launches jailed: process groups, bounded output, crash recovery,
/// the answer's defaults, the essential phase and the budget, time measured on the monotonic clock.
/// In the serialized suites of the agent's tests: their processes would otherwise compete for the
/// CPU with the timed downloads of the others.
extension AgentEventTests {
    func grandchildPID(_ f: AgentFixture) -> Int32? {
        f.extensionLog.last { $0.hasPrefix("grandchild ") }.flatMap { Int32($0.dropFirst("grandchild ".count)) }
    }

    @Test func aGrandchildNeitherHoldsTheCallNorOutlivesIt() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
        try f.extensionSettings(["mode": "grandchild"])  // starts `sleep 600` on its standard output, then answers
        let agent = try f.agent(config: try f.writeConfig(["BacklotExtensionTimeLimit": 20]))
        let seq = try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        let event = try #require(try agent.store.event(seq))
        #expect(event.state == "done")
        #expect(!event.detail.contains("extension:"), "\(event.detail)")  // both calls answered
        let pid = try #require(grandchildPID(f))
        #expect(eventually { !isAlive(pid) })  // killed with the call's process group
        #expect(try chargedRuntime(agent.store) < 10)  // not the grandchild's 600 s, nor the 2 × 20 s limit
        #expect(try agent.store.children().isEmpty)
    }

    @Test func aHangingExtensionAndItsGrandchildAreKilledAtTheLimit() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
        try f.extensionSettings(["mode": "grandchild-hang"])
        let agent = try f.agent(config: try f.writeConfig(["BacklotExtensionTimeLimit": 1]))
        let seq = try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        let event = try #require(try agent.store.event(seq))
        #expect(event.detail.contains("ran past its limit of 1 s and was killed"))
        let pid = try #require(grandchildPID(f))
        #expect(eventually { !isAlive(pid) })
        #expect(try chargedRuntime(agent.store) <= 4)  // two calls of 1 s, with slack for starting them
    }

    @Test func whatTheExtensionPrintsIsCapped() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
        try f.extensionSettings(["mode": "flood", "floodBytes": 6 << 20])
        let agent = try f.agent()
        let seq = try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        #expect(try agent.store.event(seq)?.state == "done")
        #expect(f.extensionLog.contains { $0.hasPrefix("flooded ") })
        #expect(
            f.lines.all.contains { $0.contains("printed \(6 << 20) bytes; only the last 1 MiB were kept") },
            "\(f.lines.all.suffix(3))")
        #expect(f.lines.all.filter { $0.hasPrefix("extension: x") }.count <= 100)  // 50 lines a call
        // Nothing of it in the container: no file there is near the size printed.
        let files = FileManager.default.enumerator(atPath: f.container)?.compactMap { $0 as? String } ?? []
        let largest =
            files.compactMap {
                try? FileManager.default.attributesOfItem(atPath: f.container + "/" + $0)[.size] as? Int
            }.max() ?? 0
        #expect(largest < 4 << 20)
        #expect(
            ((try? FileManager.default.contentsOfDirectory(atPath: f.container + "/.extension-calls")) ?? []).isEmpty)
    }

    @Test func anEmptyAnswerDeclinesNothing() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
        try f.server.publish(id: "Extras", seed: 2, policy: AgentFixture.prefetch)
        try f.extensionSettings(["mode": "empty-answer"])
        let agent = try f.agent()
        let seq = try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        #expect(f.extensionLog.contains("answered {}"))
        let event = try #require(try agent.store.event(seq))
        #expect(!event.detail.contains("declined"), "\(event.detail)")
        #expect(try f.installed().sorted() == ["Essential", "Extras"])
    }

    /// The app made the extension calls' folder a link to a folder elsewhere: the agent writes
    /// nothing there (no call, no manifest, no mode set), and says why.
    @Test func aLinkedExtensionCallsFolderIsNotWrittenThrough() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
        let elsewhere = f.server.dir.at("elsewhere")
        try FileSystem.makeDirectories(elsewhere)
        let agent = try f.agent()  // (its start removes what an earlier agent left there)
        #expect(symlink(elsewhere, ContainerLayout(root: f.container).extensionCallsFolder) == 0)
        let seq = try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        #expect(try FileSystem.entryNames(elsewhere).isEmpty)
        #expect(f.extensionLog.isEmpty, "the extension was not run")
        let event = try #require(try agent.store.event(seq))
        #expect(event.detail.contains("a link or not a folder"), "\(event.detail)")
    }

    /// The extension (the app's code) swaps the calls folder for a link while its call runs, to a
    /// folder that holds a folder of the call's name: the agent reads its answer and removes its
    /// call folder through the folder it opened (now moved), and nothing through the link. By path,
    /// the clean-up removed `elsewhere/NAME/keep.txt`.
    @Test func aCallsFolderSwappedForALinkDuringTheCallIsNotFollowed() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
        let elsewhere = f.server.dir.at("elsewhere")
        try FileSystem.makeDirectories(elsewhere)
        try f.extensionSettings(["mode": "swap-calls-folder", "elsewhere": elsewhere])
        let agent = try f.agent()
        let seq = try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        #expect(f.extensionLog.contains("swapped the calls folder"), "\(f.extensionLog)")
        let names = try FileSystem.entryNames(elsewhere).map { String(decoding: $0, as: UTF8.self) }
        #expect(names.count == 1, "\(names)")
        for name in names {
            #expect(FileManager.default.contents(atPath: elsewhere + "/" + name + "/keep.txt") == Data("kept".utf8))
        }
        // The call's own folder, in the folder the agent opened, is gone.
        #expect(try FileSystem.entryNames(f.container + "/moved-calls").isEmpty)
        // The next call finds the link and refuses it.
        let event = try #require(try agent.store.event(seq))
        #expect(event.detail.contains("a link or not a folder"), "\(event.detail)")
    }

    /// An extension that leaves a FIFO where its answer goes: the agent's read of it used to
    /// block for good (and every extension call after it, behind the one-at-a-time gate). It is
    /// refused as not a regular file and the call fails like one that wrote no answer. The time
    /// limit only stops the test if it hangs again.
    @Test(.timeLimit(.minutes(1))) func anAnswerThatIsAFIFOIsRefusedNotWaitedOn() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
        try f.extensionSettings(["mode": "fifo-answer"])
        let agent = try f.agent()
        let seq = try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        #expect(f.extensionLog.contains("answered with a FIFO"))
        #expect(f.lines.all.contains { $0.contains("not a regular file") }, "\(f.lines.all.suffix(5))")
        _ = try #require(try agent.store.event(seq))
    }

    /// An answer asking for more URL downloads than one may is refused whole, naming the limit
    /// (each is scheduled in a transaction of its own).
    @Test func anAnswerWithTooManyDownloadsIsRefused() throws {
        let one = #"{"identifier":"d\#(0)","url":"https://example.com/f"}"#
        func answer(_ n: Int) -> [UInt8] {
            Array(
                (#"{"downloads":["#
                    + (0..<n).map { one.replacingOccurrences(of: "d0", with: "d\($0)") }
                    .joined(separator: ",") + "]}").utf8)
        }
        #expect(try ExtensionReply(decoding: answer(3), source: "t").downloads.count == 3)
        let error = #expect(throws: BacklotError.self) {
            _ = try ExtensionReply(decoding: answer(ExtensionReply.maximumDownloads + 1), source: "t")
        }
        #expect(error?.message.contains("at most 10000 are scheduled") == true, "\(String(describing: error))")
    }

    @Test(arguments: [
        (#"{}"#, [String]()),  // no decision: every pack kept
        (#"{"downloads": []}"#, []),  // a downloads answer decides nothing about packs
        (#"{"download": []}"#, ["Extras"]),  // essential packs are never declined by omission
        (#"{"download": ["Extras"]}"#, []),
        (#"{"download": ["Essential"], "decline": []}"#, []),  // decline present: only what it names
        (#"{"decline": ["Essential"]}"#, ["Essential"]),  // an explicit decision holds for every pack
    ])
    func theAnswersDefaultsAreDefinedOnce(answer: String, declined: [String]) throws {
        let reply = try ExtensionReply(decoding: Array(answer.utf8), source: "test")
        let packs = [
            AssetPack(
                id: "Essential", downloadSize: 1, version: 1, userInfo: nil, language: nil,
                downloadPolicy: .essential(installationEventTypes: [.firstInstallation]), digest: "x"),
            AssetPack(
                id: "Extras", downloadSize: 1, version: 1, userInfo: nil, language: nil,
                downloadPolicy: .prefetch(installationEventTypes: [.firstInstallation]), digest: "y"),
        ]
        #expect(packs.filter(reply.declines).map(\.id) == declined)
        // What the host writes reads back the same.
        let again = try ExtensionReply(decoding: try reply.encoded(), source: "test")
        #expect(again == reply)
    }

    @Test func anAnswerThatIsNotAListOfIDsIsAFailedCall() {
        #expect(throws: BacklotError.self) {
            _ = try ExtensionReply(decoding: Array(#"{"download": "Essential"}"#.utf8), source: "test")
        }
    }

    @Test func aUsedUpBudgetDoesNotHoldTheEssentialPhase() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Later", seed: 3)
        try f.extensionSettings(["mode": "hang"])
        let agent = try f.agent(
            config: try f.writeConfig(["BacklotExtensionTimeLimit": 5, "BacklotExtensionDailyBudget": 1]))
        let periodic = try agent.store.enqueue(.periodic, bypassBudget: false)
        await agent.runQueuedEvents()  // the hanging call uses the whole budget
        #expect(try agent.store.event(periodic)?.detail.contains("was killed") == true)
        // An update brings a new essential pack: installed today, the extension's part waits.
        try f.extensionSettings([:])
        try f.server.publish(id: "NewEssential", seed: 5, policy: AgentFixture.essential)
        let update = try agent.store.enqueue(.update, bypassBudget: false)
        await agent.runQueuedEvents()
        let event = try #require(try agent.store.event(update))
        #expect(try f.installed().contains("NewEssential"))
        #expect(event.state == "queued" && event.essentialDone)  // what `notify --wait` waits for
        #expect(f.lines.all.contains { $0.contains("the essential packs are installed, the rest waits") })
        // no extension run without budget
        #expect(!f.extensionLog.contains { $0.hasPrefix("shouldDownload NewEssential") })
    }

    @Test func theEssentialPhaseEndsWithTheEssentialURLDownloads() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
        let url = f.server.server.baseURL + "v1/keys/root-1.json"
        try f.extensionSettings(["downloads": [["identifier": "must-have", "url": url, "essential": true]]])
        let agent = try f.agent()
        let seq = try agent.store.enqueue(.install, bypassBudget: false)
        await agent.runQueuedEvents()
        let event = try #require(try agent.store.event(seq))
        #expect(event.state == "done" && event.essentialDone)
        // Done means the essential URL download has ended too, not merely been scheduled.
        #expect(try DownloadManager(containerPath: f.container, role: .agent) { _ in }.fetchCurrentDownloads().isEmpty)
        agent.drain()
    }
}

/// The agent, its extension and the app as real processes: crashes and clock steps.
extension AgentProcessTests {
    func launch(
        _ executable: String, _ args: [String], log: String, environment: [String: String] = [:]
    ) throws -> Process {
        FileManager.default.createFile(atPath: log, contents: nil)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = args
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        p.environment = env
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        p.standardOutput = h
        p.standardError = h
        try p.run()
        return p
    }

    @Test func theNextAgentEndsTheCallACrashedOneLeftRunning() async throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
        try f.extensionSettings(["mode": "grandchild-hang"])
        let config = try f.writeConfig(["BacklotExtensionTimeLimit": 600])
        try AgentStore(containerPath: f.container).enqueue(.install, bypassBudget: false)
        let crashed = try launch(
            AgentFixture.binaries + "/backlot", ["agent", "--container", f.container, "--config", config],
            log: f.server.dir.at("agent1.log"))
        #expect(eventually { f.extensionLog.contains { $0.hasPrefix("grandchild ") } })
        let recorded = try AgentStore(containerPath: f.container).children()
        #expect(recorded.count == 1 && recorded.first?.what == "extension:shouldDownload")
        kill(crashed.processIdentifier, SIGKILL)
        crashed.waitUntilExit()
        let extensionPID = try #require(recorded.first?.pgid)
        let grandchild = try #require(
            f.extensionLog.last { $0.hasPrefix("grandchild ") }.flatMap { Int32($0.dropFirst("grandchild ".count)) })
        #expect(isAlive(extensionPID) && isAlive(grandchild))  // what a crash leaves: unsupervised
        #expect(FileManager.default.fileExists(atPath: f.container + "/.extension-calls"))

        try f.extensionSettings([:])
        let agent = try f.agent(config: config)
        #expect(!isAlive(extensionPID) && !isAlive(grandchild))
        #expect(f.lines.all.contains { $0.contains("ended extension:shouldDownload (process group \(extensionPID)") })
        #expect(try agent.store.children().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: f.container + "/.extension-calls"))
        await agent.runQueuedEvents()
        #expect(try f.installed() == ["Essential"])
        #expect(f.extensionLog.filter { $0.hasPrefix("downloads install") }.count == 1)
    }

    @Test func sigtermEndsACallWhoseGrandchildHoldsItsOutput() throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
        try f.extensionSettings(["mode": "grandchild-hang"])
        let config = try f.writeConfig(["BacklotExtensionTimeLimit": 600])
        try AgentStore(containerPath: f.container).enqueue(.install, bypassBudget: false)
        let agent = try launch(
            AgentFixture.binaries + "/backlot", ["agent", "--container", f.container, "--config", config],
            log: f.server.dir.at("agent.log"))
        #expect(eventually { f.extensionLog.contains { $0.hasPrefix("grandchild ") } })
        let grandchild = try #require(
            f.extensionLog.last { $0.hasPrefix("grandchild ") }.flatMap { Int32($0.dropFirst("grandchild ".count)) })
        kill(agent.processIdentifier, SIGTERM)
        // A watchdog only: the agent must stop on its own, not wait for the grandchild's 600 s.
        let stopped = Wait.holds(within: .seconds(30), poll: .milliseconds(100)) { !agent.isRunning }
        if !stopped { kill(agent.processIdentifier, SIGKILL) }
        agent.waitUntilExit()
        #expect(stopped, "the agent did not stop within 30 s of SIGTERM")
        #expect(agent.terminationStatus == 0)
        #expect(eventually { !isAlive(grandchild) })
        #expect(try AgentStore(containerPath: f.container).children().isEmpty)
        // it goes on at the next start
        #expect(try AgentStore(containerPath: f.container).queued().map(\.request) == [.install])
    }

    @Test func theNextAgentEndsAnAppACrashedOneLaunchedAndLaunchesItOnce() async throws {
        let f = try AgentFixture()
        let config = try f.writeConfig(
            [
                "BacklotAppExecutable": AgentFixture.binaries + "/backlot-test-app",
                "BGTaskSchedulerPermittedIdentifiers": ["com.example.refresh", "com.example.clean"],
                "BacklotRefreshTaskBudget": 600, "BacklotProcessingTaskBudget": 600,
            ], withExtension: false)
        try JSONSerialization.data(withJSONObject: ["task": "hang"]).write(
            to: URL(fileURLWithPath: f.container + "/test-app.json"))
        let app = try TaskScheduler(
            configuration: AgentConfiguration(path: config, containerPath: f.container).scheduler)
        try app.submit(AppRefreshTaskRequest(identifier: "com.example.refresh"))
        let clean = ProcessingTaskRequest(identifier: "com.example.clean")
        try app.submit(clean)
        let crashed = try launch(
            AgentFixture.binaries + "/backlot", ["agent", "--container", f.container, "--config", config],
            log: f.server.dir.at("agent1.log"))
        #expect(eventually { f.appLog.contains { $0.hasPrefix("ran ") } })
        usleep(300_000)  // several of the agent's rounds while the app runs
        let recorded = try AgentStore(containerPath: f.container).children()
        #expect(recorded.count == 1, "\(recorded)")  // one app process for two due tasks
        kill(crashed.processIdentifier, SIGKILL)
        crashed.waitUntilExit()
        let pid = try #require(recorded.first?.pgid)
        #expect(isAlive(pid))

        let agent = try f.agent(config: config)
        #expect(!isAlive(pid))
        #expect(try agent.store.children().isEmpty)
        let ran = try #require(f.appLog.first { $0.hasPrefix("ran ") })
        let id = ran.split(separator: " ")[1]
        #expect(app.history(forTaskWithIdentifier: String(id)).map(\.outcome) == [.killed])
        #expect(f.appLog.filter { $0.hasPrefix("ran ") }.count == 1)
    }

    @Test func notifyWaitReturnsWhenTheEssentialPhaseIsDoneWhateverTheBudget() throws {
        let f = try AgentFixture()
        try f.server.publish(id: "Later", seed: 3)
        try f.extensionSettings(["mode": "hang"])
        let config = try f.writeConfig(["BacklotExtensionTimeLimit": 5, "BacklotExtensionDailyBudget": 1])
        let store = try AgentStore(containerPath: f.container)
        let used = try store.enqueue(.periodic, bypassBudget: false)
        let agent = try launch(
            AgentFixture.binaries + "/backlot", ["agent", "--container", f.container, "--config", config],
            log: f.server.dir.at("agent.log"))
        defer {
            kill(agent.processIdentifier, SIGTERM)
            agent.waitUntilExit()
        }
        #expect(eventually { (try? store.event(used))?.state == "done" })  // the hanging call used the day's budget
        try f.extensionSettings([:])
        try f.server.publish(id: "NewEssential", seed: 5, policy: AgentFixture.essential)
        let notify = Process()
        notify.executableURL = URL(fileURLWithPath: AgentFixture.binaries + "/backlot")
        notify.arguments = ["notify", "--container", f.container, "--app-update", "--wait"]
        let out = Pipe()
        notify.standardOutput = out
        try notify.run()
        let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        notify.waitUntilExit()
        #expect(notify.terminationStatus == 0)
        #expect(said.contains("essential phase is done"), "\(said)")
        #expect(try f.installed().contains("NewEssential"))  // today, not at the next UTC day
    }

    /// The configuration a container names is in its database, which its app can write: `notify`
    /// run by another user (root, from a package's post-install script) does not use it, so it
    /// runs none of the executables it names and leaves the event queued; run by the container's
    /// owner, the same `notify` runs it. Root changes the container's owner for the test.
    @Test func notifyByAnotherUserDoesNotRunTheConfigurationTheContainerNames() throws {
        _ = try Requirement.root.path()
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
        try AgentStore(containerPath: f.container).setValue("configPath", try f.writeConfig())
        func notify() throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: AgentFixture.binaries + "/backlot")
            process.arguments = ["notify", "--container", f.container, "--app-install"]
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "\(said)")
            return said
        }
        #expect(chown(f.container, 65_534, 65_534) == 0)
        let refused = try notify()
        #expect(chown(f.container, 0, 0) == 0)
        #expect(refused.contains("not used by another user than its owner"), "\(refused)")
        let installedBefore = try f.installed()
        #expect(f.extensionLog.isEmpty && installedBefore.isEmpty, "nothing ran")
        _ = try notify()
        #expect(f.extensionLog.contains { $0.hasPrefix("shouldDownload Essential") }, "\(f.extensionLog)")
        #expect(try f.installed() == ["Essential"])
    }

    /// Runs `backlot notify --app-install` (the agent in that process) with a hanging extension
    /// limited to 3 s, and steps its wall clock by `step` while the call runs.
    ///
    /// Under libfaketime a Swift executable now and then starts without its arguments (seen on a
    /// loaded machine: the extension then says it is one and exits 2, before any call). That start
    /// is not the behaviour under test: it is said, and the scenario runs again in a new container
    /// (three tries at most); anything else fails at once.
    func stepTheClock(during call: String, by step: String) throws -> (charged: TimeInterval, detail: String) {
        let lib = try Requirement.libfaketime.path()
        let lostArguments = "this is a Backlot downloader extension; the agent runs it"
        for attempt in 1...3 {
            let f = try AgentFixture()
            try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
            try f.extensionSettings(["mode": "hang"])
            let config = try f.writeConfig(["BacklotExtensionTimeLimit": 3])
            let offset = f.server.dir.at("faketime")
            try "+0\n".write(toFile: offset, atomically: true, encoding: .utf8)
            // The real binary under libfaketime: its wall clock follows the file, CLOCK_MONOTONIC does not (as
            // when an administrator or NTP steps the clock). Started through env(1), itself under libfaketime:
            // a Swift executable exec'd with LD_PRELOAD=libfaketime by a process without it loses its arguments.
            let notify = try launch(
                "/usr/bin/env",
                [
                    AgentFixture.binaries + "/backlot", "notify", "--container", f.container, "--config", config,
                    "--app-install",
                ],
                log: f.server.dir.at("notify.log"),
                environment: [
                    "LD_PRELOAD": lib, "FAKETIME_TIMESTAMP_FILE": offset, "FAKETIME_NO_CACHE": "1",
                    "FAKETIME_DONT_FAKE_MONOTONIC": "1",
                ])
            let log = { (try? String(contentsOfFile: f.server.dir.at("notify.log"), encoding: .utf8)) ?? "" }
            let started = eventually { f.extensionLog.contains { $0.hasPrefix(call) } || log().contains(lostArguments) }
            if started, !f.extensionLog.contains(where: { $0.hasPrefix(call) }), attempt < 3 {
                print(
                    "AgentJailTests: attempt \(attempt): the extension started without its arguments under libfaketime; again"
                )
                if notify.isRunning { kill(notify.processIdentifier, SIGKILL) }
                notify.waitUntilExit()
                continue
            }
            #expect(f.extensionLog.contains { $0.hasPrefix(call) }, "\(log())")
            try (step + "\n").write(toFile: offset, atomically: true, encoding: .utf8)
            // A watchdog only: the call must end on its own, long before this.
            let finished = Wait.holds(within: .seconds(60), poll: .milliseconds(100)) { !notify.isRunning }
            if !finished { kill(notify.processIdentifier, SIGKILL) }
            notify.waitUntilExit()
            #expect(finished, "the extension's limit was stretched by the clock step")
            let store = try AgentStore(containerPath: f.container)
            let detail = try store.recent(1).first?.detail ?? ""
            return (try chargedRuntime(store), detail)
        }
        throw BacklotError(.io, "unreachable: the last attempt returns")
    }

    @Test(.requires(.libfaketime), arguments: ["-1h", "+2h"])
    func aStepOfTheWallClockNeitherStretchesTheLimitNorMovesTheBudget(step: String) throws {
        let (charged, detail) = try stepTheClock(during: "shouldDownload", by: step)
        #expect(
            detail.contains("shouldDownload: ") && detail.contains("ran past its limit of 3 s and was killed"),
            "\(detail)")
        // Two calls of 3 s each at most: the hour stepped back is not credited, the two hours forward not charged.
        #expect(charged > 0 && charged <= 8, "charged \(charged) s")
    }
}

/// The agent's periodic interval on the monotonic clock.
extension AgentEventTests {
    @Test(arguments: [-3600.0, 7200.0])
    func periodicChecksComeAtTheirIntervalWhateverTheWallClockDoes(step: Double) async throws {
        let f = try AgentFixture()
        let clock = ManualClock(Date())
        let path = try f.writeConfig(["BacklotPeriodicCheckInterval": 600], withExtension: false)
        let agent = try Agent(
            containerPath: f.container, configuration: AgentConfiguration(path: path, containerPath: f.container),
            conditions: f.conditions, clock: clock, log: { [lines = f.lines] l in lines.add(l) })
        await agent.round()  // the first start sets the clock going
        // Unused app: 8 × 600 s between checks, spread by the factor drawn at the start (0.8–1.2).
        let factor = try #require(try agent.store.value("periodicFactor").flatMap(Double.init))
        #expect(factor >= 0.8 && factor <= 1.2)
        let due = 4800 * factor
        clock.step(by: step)
        await agent.round()
        #expect(try agent.store.queued().isEmpty)  // two hours forward are not a due check
        clock.advance(by: due - 1)
        await agent.round()
        #expect(try agent.store.queued().isEmpty)
        clock.advance(by: 1.5)
        await agent.round()
        #expect(try agent.store.queued().map(\.request) == [.periodic])  // an hour back does not delay it
    }
}
