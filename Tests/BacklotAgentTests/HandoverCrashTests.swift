import BacklotAgent
import BacklotBasics
import BacklotClient
import BacklotContainer
import BacklotTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// "Nothing lost, nothing twice": a real agent process stopped (SIGTERM) or killed (SIGKILL) at
/// every step of a URL download's hand-over, then started again; the outcome reaches exactly one
/// receiver, the app or the extension.
@Suite(.serialized) struct HandoverCrashTests {
    /// The named steps (``TestStopPoint``), in order: in the agent, then in the extension's process.
    static let stopPoints = [
        "handover.afterRecord", "handover.afterRename", "handover.underLock", "handover.afterPost",
        "handover.beforeExtension", "handover.afterExtension", "handover.extensionAnswered",
    ]

    func start(_ args: [String], log: String, stopAt: String? = nil) throws -> Process {
        if !FileManager.default.fileExists(atPath: log) { FileManager.default.createFile(atPath: log, contents: nil) }
        let p = Process()
        p.executableURL = URL(
            fileURLWithPath: AgentFixture.binaries + (args.first == "listen" ? "/backlot-test-app" : "/backlot"))
        p.arguments = args
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "BACKLOT_TEST_STOP_AT")
        if let stopAt { env["BACKLOT_TEST_STOP_AT"] = stopAt }
        p.environment = env
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        h.seekToEndOfFile()
        p.standardOutput = h
        p.standardError = h
        try p.run()
        return p
    }

    func text(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// How many times the extension and the app received the outcome of `id`.
    func receipts(_ f: AgentFixture, _ id: String) -> (ext: Int, app: Int) {
        let ext = text(f.container + "/test-extension.log").split(separator: "\n")
            .filter { $0.hasPrefix("finished \(id) moved=") || $0.hasPrefix("failed \(id):") }.count
        let app = text(f.container + "/test-app.log").split(separator: "\n")
            .filter { $0.hasPrefix("app finished \(id) moved=") || $0.hasPrefix("app failed \(id):") }.count
        return (ext, app)
    }

    /// Queues a URL download as an app does while an agent runs (the agent runs it).
    func schedule(_ f: AgentFixture, _ id: String, url: String) throws {
        let m = try DownloadManager(containerPath: f.container, role: .agent) { _ in }
        try m.scheduleDownload(URLDownload(identifier: id, url: try #require(URL(string: url))))
    }

    /// Listens as the app for a moment.
    func listen(_ f: AgentFixture, seconds: Double) throws {
        let p = try start(["listen", f.container, String(seconds)], log: f.server.dir.at("listen.log"))
        p.waitUntilExit()
    }

    /// After the stop: starts the agent again (with the app listening meanwhile when `appListens`),
    /// lets every outcome settle (an `--once` agent, a last listener), and returns the receipts.
    func restartAndSettle(
        _ f: AgentFixture, config: String, id: String, appListens: Bool
    ) throws -> (ext: Int, app: Int) {
        let listener = appListens ? try start(["listen", f.container, "3"], log: f.server.dir.at("listen.log")) : nil
        if appListens {
            #expect(eventually { FileManager.default.fileExists(atPath: f.container + "/.app-listening.lock") })
        }
        let agent = try start(
            ["agent", "--container", f.container, "--config", config], log: f.server.dir.at("agent2.log"))
        #expect(eventually { text(f.server.dir.at("agent2.log")).contains("agent: watching") })
        // Posted for the app: a listener takes it; sent to the extension: the extension logs it.
        _ = eventually {
            let r = receipts(f, id)
            if r.ext + r.app > 0 { return true }
            if !appListens { try? listen(f, seconds: 0.2) }
            return false
        }
        kill(agent.processIdentifier, SIGTERM)
        agent.waitUntilExit()
        #expect(
            agent.terminationReason == .exit && agent.terminationStatus == 0, "\(text(f.server.dir.at("agent2.log")))")
        listener?.waitUntilExit()
        // Anything still due anywhere would show now: one more start, one more listener.
        let once = try start(
            ["agent", "--container", f.container, "--config", config, "--once"], log: f.server.dir.at("agent3.log"))
        once.waitUntilExit()
        try listen(f, seconds: 0.3)
        return receipts(f, id)
    }

    @Test(arguments: ["finished", "failed"], Self.stopPoints.flatMap { [$0 + ":KILL", $0 + ":TERM"] })
    func anOutcomeReachesExactlyOneReceiverWhereverTheAgentStops(kind: String, stopAt: String) throws {
        if kind == "failed" && stopAt.hasPrefix("handover.afterRename") { return }  // a failure has no file to rename
        let seed = testSeed()
        print("anOutcomeReachesExactlyOneReceiverWhereverTheAgentStops(\(kind), \(stopAt)): seed \(seed)")
        var rng = SeededGenerator(seed: seed)
        let appListens = rng.next() % 2 == 0
        let f = try AgentFixture()
        let config = try f.writeConfig()
        try f.extensionSettings([:])
        let id = "handover"
        let url = f.server.server.baseURL + (kind == "finished" ? "v1/keys/root-1.json" : "v1/keys/no-such-file.json")
        try schedule(f, id, url: url)
        let inExtension = stopAt.hasPrefix("handover.extension")
        let first = try start(
            ["agent", "--container", f.container, "--config", config], log: f.server.dir.at("agent1.log"),
            stopAt: stopAt)
        let log1 = { text(f.server.dir.at("agent1.log")) }
        if inExtension {
            // The extension's process stops after its handler ran; the agent goes on, then is stopped.
            #expect(
                eventually {
                    log1().contains("download \(id): ")
                        && (log1().contains("handed to the extension") || log1().contains("could not take it"))
                }, "\(log1())")
            kill(first.processIdentifier, SIGTERM)
        }
        first.waitUntilExit()
        #expect(log1().contains("stop point \(stopAt.split(separator: ":")[0]) reached"), "seed \(seed)\n\(log1())")
        if !inExtension {
            if stopAt.hasSuffix(":KILL") {
                #expect(first.terminationReason == .uncaughtSignal && first.terminationStatus == SIGKILL, "\(log1())")
            } else {
                #expect(first.terminationReason == .exit && first.terminationStatus == 0, "\(log1())")
            }
        }
        let r = try restartAndSettle(f, config: config, id: id, appListens: appListens)
        #expect(
            r.ext + r.app == 1,
            "extension \(r.ext), app \(r.app) (seed \(seed), app listening: \(appListens))\n\(log1())\n\(text(f.server.dir.at("agent2.log")))"
        )
        if kind == "finished" {
            // The receiver has the file, whole; nothing is left behind in the container.
            let received = [f.container + "/extension-received/" + id, f.container + "/app-received/" + id].filter {
                FileManager.default.fileExists(atPath: $0)
            }
            #expect(received.count == 1)
            let original = try Data(
                contentsOf: URL(fileURLWithPath: f.server.repository.directory.publicTreePath + "/v1/keys/root-1.json"))
            #expect(try received.first.map { try Data(contentsOf: URL(fileURLWithPath: $0)) } == original)
        }
        let left = (try? FileManager.default.contentsOfDirectory(atPath: f.container + "/downloads/handover")) ?? []
        #expect(left.isEmpty, "\(left)")
        #expect(try DownloadManager(containerPath: f.container, role: .agent) { _ in }.fetchCurrentDownloads().isEmpty)
    }

    /// The issue's case: the app holds exclusive control when `systemctl stop` arrives.
    @Test func aStopWhileTheAppHoldsExclusiveControlLosesNothing() throws {
        let seed = testSeed()
        print("aStopWhileTheAppHoldsExclusiveControlLosesNothing: seed \(seed)")
        var rng = SeededGenerator(seed: seed)
        let f = try AgentFixture()
        let config = try f.writeConfig()
        try f.extensionSettings([:])
        let agent = try start(
            ["agent", "--container", f.container, "--config", config], log: f.server.dir.at("agent1.log"))
        #expect(eventually { text(f.server.dir.at("agent1.log")).contains("agent: watching") })
        let app = try DownloadManager(containerPath: f.container, role: .agent) { _ in }
        let holding = DispatchSemaphore(value: 0)
        let letGo = DispatchSemaphore(value: 0)
        let holder = Thread {
            _ = try? app.withExclusiveControl {
                holding.signal()
                letGo.wait()
            }
        }
        holder.start()
        holding.wait()
        try schedule(f, "held", url: f.server.server.baseURL + "v1/keys/root-1.json")
        // The download has finished and left the queue: its outcome is recorded, waiting for the lock.
        #expect(eventually { (try? app.fetchCurrentDownloads().isEmpty) == true })
        usleep(useconds_t(rng.next() % 200_000))  // a moment more or less for the agent to wait on the lock
        kill(agent.processIdentifier, SIGTERM)
        agent.waitUntilExit()
        #expect(agent.terminationReason == .exit && agent.terminationStatus == 0)
        letGo.signal()
        let r = try restartAndSettle(f, config: config, id: "held", appListens: rng.next() % 2 == 0)
        #expect(
            r.ext + r.app == 1,
            "extension \(r.ext), app \(r.app) (seed \(seed))\n\(text(f.server.dir.at("agent1.log")))")
    }
}

/// Two `notify` processes at once, with no agent running: each event is run (by whichever process
/// holds the agent lock), never stranded as "queued".
@Suite(.serialized) struct ConcurrentNotifyTests {
    func run(_ args: [String]) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: AgentFixture.binaries + "/backlot")
        p.arguments = args
        p.standardOutput = Pipe()
        p.standardError = Pipe()
        try p.run()
        return p
    }

    func output(_ p: Process) -> String {
        let out = (p.standardOutput as? Pipe)?.fileHandleForReading.readDataToEndOfFile() ?? Data()
        let err = (p.standardError as? Pipe)?.fileHandleForReading.readDataToEndOfFile() ?? Data()
        p.waitUntilExit()
        return String(decoding: out + err, as: UTF8.self)
    }

    @Test(arguments: [false, true]) func twoNotifiesAtOnceRunBothEvents(wait: Bool) throws {
        let seed = testSeed()
        print("twoNotifiesAtOnceRunBothEvents(wait: \(wait)): seed \(seed)")
        var rng = SeededGenerator(seed: seed)
        let f = try AgentFixture()
        try f.server.publish(id: "Essential", seed: 1, policy: AgentFixture.essential)
        let config = try f.writeConfig(withExtension: false)
        for round in 0..<6 {
            let args =
                ["notify", "--container", f.container, "--app-update", "--config", config] + (wait ? ["--wait"] : [])
            let a = try run(args)
            usleep(useconds_t(rng.next() % 150_000))  // the second one lands somewhere in the first one's run
            let b = try run(args)
            let (outA, outB) = (output(a), output(b))
            #expect(
                a.terminationStatus == 0 && b.terminationStatus == 0, "round \(round) (seed \(seed)):\n\(outA)\n\(outB)"
            )
            let store = try AgentStore(containerPath: f.container)
            #expect(try store.queued().isEmpty, "round \(round) (seed \(seed)): stranded\n\(outA)\n---\n\(outB)")
            if wait {
                #expect(
                    outA.contains("update event done") && outB.contains("update event done"),
                    "round \(round) (seed \(seed)):\n\(outA)\n---\n\(outB)")
            }
        }
        #expect(
            try AgentStore(containerPath: f.container).recent(20).filter { $0.request == .update }.allSatisfy {
                $0.state == "done"
            })
        #expect(try f.installed() == ["Essential"])
    }
}
