import BacklotAgent
import BacklotBasics
import BacklotContainer
import BacklotExtension
import BacklotJSON
import BacklotPeerCache
import BacklotProtocol
import BacklotRepository
import BacklotTaskScheduler
import Dispatch
import Foundation

/// `backlot agent --container DIR --config FILE`: the long-running background system for a container.
struct AgentCommand: Command {
    static let spec = CommandSpec(
        name: "agent",
        summary:
            "Run the background system for a container: install and update events, periodic checks, URL downloads, background launches.",
        discussion: """
            FILE is Backlot's JSON configuration or the app's Info.plist (see docs/agent.md for the keys). The agent stops \
            cleanly on SIGTERM or Ctrl-C: verified chunks are kept and queued events run at the next start. \
            Installers call `backlot notify` to queue install and update events.
            """,
        options: [container, config, once, peerCache])
    static let container = Option<String>("container", "DIR", help: "The app's container folder.")
    static let config = Option<String>("config", "FILE", help: "The configuration: JSON or an Info.plist.")
    static let once = Flag("once", help: "Run one round (queued events, the periodic check, due tasks) and exit.")
    static let peerCache = Flag(
        "peer-cache",
        help:
            "Serve this container's installed chunks to the local network while on mains power and an unmetered network (as BacklotPeerCache; docs/peer-cache.md)."
    )

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        // A device's memory is the device's: idle malloc arenas of the installs' threads and freed
        // large blocks are not kept resident (``MemoryArenas``).
        MemoryArenas.keepSmallForDevice()
        let container = arguments[Self.container]
        var configuration = try AgentConfiguration(path: arguments[config], containerPath: container)
        if arguments[peerCache] && configuration.peerCache == nil { configuration.peerCache = PeerCacheSettings() }
        let agent = try Agent(containerPath: container, configuration: configuration, log: agentLog(io))
        BacklotCLI.onInterrupt { _ in agent.stop() }
        try BlockingPool.waitForAsync {
            if arguments[once] { await agent.round() } else { await agent.run() }
        }
        if arguments[once] { agent.drain() }
    }
}

/// Log lines with the time, as a service writes them.
func agentLog(_ io: any CommandIO) -> @Sendable (String) -> Void {
    { line in
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.dateFormat = "HH:mm:ss"
        io.out("\(f.string(from: Date())) \(line)\n")
    }
}

/// What `notify` and `simulate` share: queue the event, then run it here when no agent runs.
enum EventCommand {
    /// Queues the event, then decides by trying the agent lock, never by a probe: when this
    /// process takes it, no agent runs, and it runs the queue itself (every due event, its own and
    /// those queued meanwhile by a `notify` that found the lock held), lets go, and looks again;
    /// when another process holds it, that process runs the event before it lets go (or leaves it
    /// queued for the next agent start when it cannot finish it). With `--wait` it keeps trying
    /// the lock until the event is no longer queued, taking over when the holder has gone.
    static func fire(
        _ request: ContentRequest, bypassBudget: Bool, container: String, arguments: ParsedArguments, io: any CommandIO
    ) throws {
        let store = try AgentStore(containerPath: container)
        let seq = try store.enqueue(request, bypassBudget: bypassBudget)
        // The configuration an agent of this container named last is in the container's database,
        // which its app can write: it is used only by the container's own user. Another (root, a
        // package's post-install script) would otherwise run whatever executables it names.
        // The folder (followed, as it is used: a root-owned link to a user's container is the
        // user's) and the database the value is read from must both be this user's.
        let ownContainer = try [container, ContainerLayout(root: container).agentDatabase].allSatisfy {
            try FileSystem.status($0)?.isOwnedByThisProcessUser ?? false
        }
        let configPath = try arguments[EventCommand.config] ?? (ownContainer ? store.value("configPath") : nil)
        let wait = arguments[NotifyCommand.wait] || bypassBudget
        let json = arguments[jsonFlag]
        var tried = Set<Int64>()
        var announced = false
        while true {
            if let lock = try AgentLock.tryAcquire(containerPath: container) {
                guard let configPath else {
                    lock.release()
                    if json {
                        try io.outJSON(
                            EventOutput(
                                event: request.name, state: "queued",
                                detail: ownContainer
                                    ? "no agent runs and no configuration is known: it runs when backlot agent starts"
                                    : "no agent runs, and the container's own configuration is not used by another user: it runs when backlot agent starts, or give --config"
                            ))
                    } else {
                        io.out(
                            ownContainer
                                ? "queued the \(request.name) event; no agent runs and no configuration is known, so it runs when `backlot agent` starts\n"
                                : "queued the \(request.name) event; no agent runs, and the configuration this container names is not used by another user than its owner, so it runs when `backlot agent` starts (or give --config)\n"
                        )
                    }
                    return
                }
                let configuration = try AgentConfiguration(path: configPath, containerPath: container)
                let agent = try Agent(
                    containerPath: container, configuration: configuration, lock: lock, log: agentLog(io))
                BacklotCLI.onInterrupt { _ in agent.stop() }
                // The events, then the URL downloads they scheduled (this process is the agent for now).
                tried.formUnion(try BlockingPool.waitForAsync { await agent.runUntilQueueSettles() })
                if !agent.isStopping && agent.untriedEvents(besides: tried) { continue }
                return try report(store.event(seq), json: json, io: io)
            }
            // Another process holds the lock: it runs every queued event before it lets go.
            if tried.contains(seq) { return try report(store.event(seq), json: json, io: io) }
            if !announced && !json {
                io.out("queued the \(request.name) event for the running agent\n")
                announced = true
            }
            guard wait else {
                if json {
                    try io.outJSON(
                        EventOutput(event: request.name, state: "queued", detail: "queued for the running agent"))
                }
                return
            }
            // Until the event is over, or its essential phase is (an event held for the extension's
            // budget goes on tomorrow, its essential packs installed).
            if let event = try store.event(seq), event.state != "queued" || event.essentialDone {
                return try report(event, json: json, io: io)
            }
            usleep(100_000)
        }
    }

    /// `notify --json`, `simulate --json` (docs/json.md).
    struct EventOutput: Encodable {
        let event: String
        let state: String
        let detail: String
        var essentialDone = false
    }

    static func report(_ event: AgentStore.Event?, json: Bool, io: any CommandIO) throws {
        guard let event else { return }
        if json {
            try io.outJSON(
                EventOutput(
                    event: event.request.name, state: event.state, detail: event.detail,
                    essentialDone: event.essentialDone))
        }
        switch event.state {
        case _ where json && event.state != "failed": return
        case "done": io.out("\(event.request.name) event done: \(event.detail)\n")
        case "failed": throw BacklotError(.checkFailed, "the \(event.request.name) event failed: \(event.detail)")
        default:
            if event.lastProblem == BacklotError.Code.tls.name {
                throw BacklotError(
                    .tls, "the \(event.request.name) event is still queued: \(event.detail)",
                    context: "event \(event.seq)",
                    hint: "the agent tries it again; fix the trust (BacklotCAFile) first")
            }
            if event.essentialDone {
                io.out(
                    "the \(event.request.name) event's essential phase is done; the rest of it is still queued (waiting for the extension's budget, the network, or stopped); the agent finishes it\n"
                )
            } else {
                let why = event.lastProblem == nil ? "not tried yet" : event.detail
                io.out("the \(event.request.name) event is still queued (\(why)); the agent finishes it\n")
            }
        }
    }

    static func request(
        _ arguments: ParsedArguments, allowed: [(Flag, ContentRequest)], command: String
    ) throws -> ContentRequest {
        let given = allowed.filter { arguments[$0.0] }
        guard given.count == 1 else {
            throw BacklotError(
                .usage, "give exactly one of \(allowed.map { "--\($0.0.info.name)" }.joined(separator: ", "))",
                context: "backlot \(command)")
        }
        return given[0].1
    }

    static let container = Option<String>("container", "DIR", help: "The app's container folder.")
    static let config = Option<String?>(
        "config", "FILE", help: "The agent's configuration, to run the event here when no agent runs.")
    static let install = Flag("app-install", help: "The app was installed.")
    static let update = Flag("app-update", help: "The app was updated.")
}

/// `backlot notify --container DIR --app-install|--app-update`: what an installer calls.
struct NotifyCommand: Command {
    static let spec = CommandSpec(
        name: "notify",
        summary:
            "Tell the agent the app was installed or updated (what a post-install script calls); budgets and restrictions apply.",
        discussion:
            "With an agent running for the container, the event is queued for it. Otherwise it runs now, with --config or the configuration the agent last used; without either it waits for the agent.",
        options: [
            EventCommand.container, EventCommand.install, EventCommand.update, EventCommand.config, wait, jsonFlag,
        ])
    static let wait = Flag("wait", help: "With an agent running, wait until it has handled the event.")

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let r = try EventCommand.request(
            arguments, allowed: [(EventCommand.install, .install), (EventCommand.update, .update)], command: "notify")
        try EventCommand.fire(
            r, bypassBudget: false, container: arguments[EventCommand.container], arguments: arguments, io: io)
    }
}

/// `backlot simulate --container DIR --app-install|--app-update|--periodic|--language-change`: fire an event now, bypassing the budget.
struct SimulateCommand: Command {
    static let spec = CommandSpec(
        name: "simulate",
        summary:
            "Fire an install, update, periodic or language-change event now, bypassing the extension's daily budget (as backgroundassets-debug --simulate).",
        options: [EventCommand.container, install, update, periodic, languageChange, EventCommand.config, jsonFlag])
    static let install = Flag("app-install", help: "An install event.")
    static let update = Flag("app-update", help: "An update event.")
    static let periodic = Flag("periodic", help: "A periodic check.")
    static let languageChange = Flag(
        "language-change", help: "A change of the preferred languages: the localized packs are reconciled.")

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let r = try EventCommand.request(
            arguments,
            allowed: [
                (install, .install), (update, .update), (periodic, .periodic), (languageChange, .languageChange),
            ],
            command: "simulate")
        try EventCommand.fire(
            r, bypassBudget: true, container: arguments[EventCommand.container], arguments: arguments, io: io)
    }
}

/// `backlot agent status --container DIR`: what the background system knows about a container.
struct AgentStatusCommand: Command {
    static let spec = CommandSpec(
        name: "agent status",
        summary:
            "Show a container's background state: whether an agent runs, events, extension runtime today, task requests and runs.",
        options: [EventCommand.container, jsonFlag])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let container = URL(fileURLWithPath: arguments[EventCommand.container]).standardizedFileURL.path
        guard
            FileManager.default.fileExists(atPath: ContainerLayout(root: container).agentDatabase)
                || FileManager.default.fileExists(atPath: ContainerLayout(root: container).tasksDatabase)
        else {
            throw BacklotError(
                .invalidInput, "no agent has used this container yet", context: container,
                hint: "start one with backlot agent --container \(container) --config FILE")
        }
        let store = try AgentStore(containerPath: container)
        let tasks = try TaskScheduler(
            configuration: .init(permittedIdentifiers: [], databasePath: ContainerLayout(root: container).tasksDatabase)
        )
        let running = AgentLock.isHeld(containerPath: container)
        let events = try store.recent(10)
        let runtime = try store.extensionRuntime(on: Date())
        let pending = tasks.pendingTaskRequests()
        let runs = Array(tasks.history().suffix(10).reversed())
        func date(_ d: Date?) -> String { d.map { RFC3339.string($0) } ?? "" }
        if arguments[jsonFlag] {
            try io.outJSON(
                Output(
                    agentRunning: running, configuration: try store.value("configPath"),
                    extensionSecondsToday: runtime,
                    events: events.map {
                        .init(seq: $0.seq, request: $0.request.name, state: $0.state, detail: $0.detail)
                    },
                    pendingTasks: pending.map { r in
                        .init(
                            identifier: r.identifier, kind: r is ProcessingTaskRequest ? "processing" : "refresh",
                            earliestBeginDate: r.earliestBeginDate.map { RFC3339.string($0) })
                    },
                    taskRuns: runs.map {
                        .init(identifier: $0.identifier, started: date($0.started), outcome: $0.outcome.rawValue)
                    }))
            return
        }
        io.out(
            "agent: \(running ? "running" : "not running")\(try store.value("configPath").map { " (configuration \($0))" } ?? "")\n"
        )
        io.out("extension runtime today: \(CheckedInteger.secondsText(runtime)) s\n")
        io.out("events (newest first):\(events.isEmpty ? " none" : "")\n")
        for e in events {
            io.out("  #\(e.seq) \(e.request.name)\t\(e.state)\(e.detail.isEmpty ? "" : "\t" + e.detail)\n")
        }
        io.out("pending task requests:\(pending.isEmpty ? " none" : "")\n")
        for r in pending {
            io.out(
                "  \(r.identifier)\t\(r is ProcessingTaskRequest ? "processing" : "refresh")\t\(date(r.earliestBeginDate))\n"
            )
        }
        io.out("task runs (newest first):\(runs.isEmpty ? " none" : "")\n")
        for r in runs { io.out("  \(r.identifier)\t\(date(r.started))\t\(r.outcome.rawValue)\n") }
    }
}

extension AgentStatusCommand {
    /// `agent status --json` (docs/json.md).
    struct Output: Encodable {
        struct Event: Encodable {
            let seq: Int64
            let request: String
            let state: String
            let detail: String
        }
        struct PendingTask: Encodable {
            let identifier: String
            let kind: String
            @NullWhenAbsent var earliestBeginDate: String?
        }
        struct TaskRun: Encodable {
            let identifier: String
            let started: String
            let outcome: String
        }
        let agentRunning: Bool
        @NullWhenAbsent var configuration: String?
        let extensionSecondsToday: Double
        let events: [Event]
        let pendingTasks: [PendingTask]
        let taskRuns: [TaskRun]
    }
}
