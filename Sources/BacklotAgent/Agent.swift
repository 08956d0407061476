import BacklotBasics
import BacklotClient
import BacklotContainer
import BacklotExtension
import BacklotFormat
import BacklotPeerCache
import BacklotTaskScheduler
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The background system for one container (`backlot agent`): what iOS does for an app that the
/// app cannot do itself.
///
/// - On an install or update event (``AgentStore/enqueue(_:bypassBudget:)``, from `backlot
///   notify`), it verifies the catalog, asks the extension which candidate packs to keep
///   (``ManagedDownloaderExtension/shouldDownload(_:)``), fetches the essential packs (not in an
///   App Clip), runs the extension's `downloads(for:)` (no scheduling meanwhile) and schedules
///   what it returns, then fetches the prefetch packs whose `installationEventTypes` match, waiting
///   for an unmetered network by default.
/// - Periodically (less often when the app is little used, ``PeriodicCheckPolicy``) it updates
///   installed packs and asks the extension for non-essential downloads.
/// - It runs the URL downloads scheduled while the app is closed and hands each outcome to the app
///   when it listens, else to the extension, never both.
/// - When a task request is due and the app is not running, it launches the app's executable in
///   the background (``AppLauncher``).
/// - Downloads stop when the network goes away (or becomes metered, for prefetch packs) and go on
///   when it returns; ``stop()`` (SIGTERM) keeps every verified chunk, and a restart resumes.
///
/// ```swift
/// let agent = try Agent(containerPath: "/var/lib/game", configuration: AgentConfiguration(path: "agent.json", containerPath: "/var/lib/game"))
/// try await agent.run()    // until agent.stop()
/// ```
public final class Agent: Sendable {
    public let containerPath: String
    public let configuration: AgentConfiguration
    public let store: AgentStore
    public let scheduler: TaskScheduler
    let manager: AssetPackManager
    let downloads: DownloadManager
    let conditions: any DeviceConditionSource
    let clock: any TaskSchedulerClock
    let log: @Sendable (String) -> Void
    let extensionRunner: ExtensionRunner?
    let launcher: AppLauncher?
    let state = Mutex<State>(State())
    let stopFlag: StopFlag
    /// Events in a row the server refused as busy (503 or 429): the back-off's attempt number when
    /// it names no `Retry-After`; back to 0 when an event gets through.
    let busyStreak = Atomic<Int>(0)
    /// The last complaint about `BacklotPreferredLanguages` (each is logged once).
    let lastLanguageWarning = Mutex<String?>(nil)
    /// One agent per container, for as long as this one lives.
    let lock: AgentLock
    /// Outcomes being handed to the extension.
    let handoffs: DispatchGroup
    /// What the loop sleeps on between rounds: poked by `notify`, an app that schedules a download
    /// or submits a task, and ``stop()``.
    let wake: WakeChannel

    struct State {
        var progresses: [String: ProgressBox] = [:]
        /// The LAN peer cache while ``run()`` runs (``startPeerCache()``), and its advertisement.
        var peerCache: PeerCacheServer?
        var advertiser: PeerCacheAdvertiser?
        /// Reads the conditions the peer cache serves under (``startPeerCache()``).
        var peerCacheTimer: RepeatingTimer?
        var lastAdvertiserProblem: String?
    }

    /// What one event did.
    public struct EventReport: Sendable, Hashable {
        public var request: ContentRequest
        /// Packs installed or already up to date, in order.
        public var packs: [String] = []
        /// Candidate packs the extension's `shouldDownload` turned down.
        public var declined: [String] = []
        /// URL downloads the extension returned and that were scheduled.
        public var scheduled: [String] = []
        /// URL downloads refused, with the reason.
        public var refused: [String] = []
        /// Extension calls that failed (crashed, killed at the limit, out of budget).
        public var extensionFailures: [String] = []
    }

    /// - Parameters:
    ///   - conditions: network and power (``LinuxDeviceConditions`` by default).
    ///   - log: one line per thing done.
    ///   - lock: the container's agent lock, already taken (``AgentLock/tryAcquire(containerPath:)``);
    ///     without it, the agent takes it.
    /// - Throws: ``BacklotError/Code/alreadyExists`` when another agent runs for the container
    ///   (it holds `DIR/.agent.lock` for as long as it lives).
    public init(
        containerPath: String, configuration: AgentConfiguration, conditions: (any DeviceConditionSource)? = nil,
        clock: any TaskSchedulerClock = SystemClock(), lock heldLock: AgentLock? = nil,
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) throws {
        let path = URL(fileURLWithPath: containerPath).standardizedFileURL.path
        guard let lock = try heldLock ?? AgentLock.tryAcquire(containerPath: path) else {
            throw BacklotError(
                .alreadyExists, "another agent runs for this container", context: path,
                hint: "stop it first, or use backlot notify to queue events for it")
        }
        self.lock = lock
        self.containerPath = path
        wake = try WakeChannel(path: ContainerLayout(root: path).agentWakeChannel)
        self.configuration = configuration
        self.log = log
        self.clock = clock
        self.conditions = CachedConditions(
            conditions ?? LinuxDeviceConditions(meteredFallback: configuration.networkMetered))
        let store = try AgentStore(containerPath: path)
        self.store = store
        var schedulerConfig = configuration.scheduler
        schedulerConfig.databasePath = ContainerLayout(root: path).tasksDatabase
        scheduler = try TaskScheduler(configuration: schedulerConfig, clock: clock, conditions: self.conditions)
        let manager = try AssetPackManager(configuration: configuration.managerConfiguration(containerPath: path))
        manager.setPreferredLanguages(configuration.preferredLanguages)
        self.manager = manager
        let stopFlag = StopFlag()
        self.stopFlag = stopFlag
        let runner = configuration.extensionPath.map {
            ExtensionRunner(
                executable: $0, containerPath: path, store: store, timeLimit: configuration.extensionTimeLimit,
                dailyBudget: configuration.extensionDailyBudget, log: log, isStopping: { stopFlag.isSet },
                preferredLanguages: { manager.preferredLanguages },
                resolvedLanguage: { manager.resolvedLanguage?.maximalIdentifier })
        }
        extensionRunner = runner
        launcher = configuration.appExecutable.map { executable in
            AppLauncher(
                executable: executable, arguments: configuration.appArguments, containerPath: path,
                configPath: configuration.sourcePath,
                store: store, log: log)
        }
        // What a crashed agent left running: its extension call or background launch is ended
        // (before anything here starts a child), the extension calls' files removed, and an app
        // it launched is recorded as killed, so that its task is not launched a second time at once.
        for child in Supervisor.endLeftovers(store: store, containerPath: path, log: log)
        where child.what.hasPrefix("app:") {
            let parts = child.what.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count == 3, let kind = TaskKind(rawValue: parts[1]) else { continue }
            scheduler.recordOutcome(
                forTaskWithIdentifier: parts[2], kind: kind, started: child.started, outcome: .killed)
        }
        let handoffs = DispatchGroup()
        self.handoffs = handoffs
        downloads = try DownloadManager(
            containerPath: path, restrictions: configuration.restrictions, caFile: configuration.caFile,
            isAppClip: configuration.scheduler.isAppClip, role: .agent
        ) { event, manager in
            Agent.route(event, manager: manager, runner: runner, handoffs: handoffs, log: log)
        }
        if let runner { downloads.setChallengeResponder(Agent.challengeResponder(runner: runner, log: log)) }
        // What a stopped or crashed agent left: reservations the extension did not take go to the
        // app; outcomes recorded and never handed over are routed now.
        try downloads.releaseUnfinishedReservations()
        try downloads.deliverRecordedOutcomes()
        try store.setValue("configPath", configuration.sourcePath)
        store.prune()
    }

    /// What `backlot notify` does while it acts as the agent: rounds until every queued event that
    /// is due has been tried once (events queued meanwhile by a `notify` that found the lock held
    /// included), then the downloads they scheduled, then it lets go of the lock and looks once
    /// more: an event queued before another process failed to take the lock is never stranded.
    /// Events that could not finish (no network, say) stay queued for the next agent start.
    /// - Returns: the events tried.
    @discardableResult
    public func runUntilQueueSettles() async -> Set<Int64> {
        var tried = Set<Int64>()
        var first = true
        while !isStopping {
            let due = ((try? store.queued(dueAt: clock.now)) ?? []).filter { !tried.contains($0.seq) }
            if !first && due.isEmpty { break }
            first = false
            tried.formUnion(due.map(\.seq))
            await round()
        }
        drain()
        lock.release()
        return tried
    }

    /// Whether queued events that are due were not among `tried` (look after letting go of the lock).
    public func untriedEvents(besides tried: Set<Int64>) -> Bool {
        ((try? store.queued(dueAt: clock.now)) ?? []).contains { !tried.contains($0.seq) }
    }

    /// Waits until the URL downloads scheduled so far have run and their outcomes are handed over
    /// (what `backlot notify` and `agent --once` do before they exit).
    public func drain() {
        downloads.waitUntilIdle()
        handoffs.wait()
    }

    // MARK: The loop

    /// The longest the agent sleeps when nothing is due (it wakes at once when poked).
    static let maximumSleep: TimeInterval = 60

    /// Runs rounds (queued events, the periodic check, due tasks) until ``stop()``, sleeping in
    /// between until the next thing is due (``nextWakeDelay()``) or until it is poked: no polling
    /// loop while idle.
    public func run() async {
        log("agent: watching \(containerPath) (\(configuration.app), \(configuration.channel.rawValue))")
        startPeerCache()
        while !isStopping {
            await round()
            if isStopping { break }
            let delay = nextWakeDelay()
            let wake = self.wake
            // A blocking wait on a thread of its own, never on the cooperative pool.
            _ = try? await BlockingPool.longRunning.run { wake.wait(seconds: delay) }
        }
        stopPeerCache()
        launcher?.stopAll(scheduler: scheduler)
        handoffs.wait()  // the stop flag ends extension calls at once; their outcomes go to the app
        // No URL transfer may outlive the loop: the process exits next, and its exit handlers free
        // what libcurl and OpenSSL use (a transfer still running then crashed the agent at exit).
        if !downloads.stop() { log("agent: a URL download's handler did not return; stopping without it") }
        log("agent: stopped")
    }

    /// Stops: downloads in flight are cancelled after their verified chunks are recorded; queued
    /// events stay queued for the next start.
    public func stop() {
        stopFlag.set()
        wake.poke()
        let refs = state.withLock { Array($0.progresses.values) }
        for r in refs { r.progress.cancel() }
    }

    public var isStopping: Bool { stopFlag.isSet }

    /// How long to sleep before the next round: until the next due time (a held event, the
    /// periodic check, a task's earliest start), at most ``maximumSleep``; and only `pollInterval`
    /// while something waits for conditions (a queued event or task that is due, a URL download
    /// scheduled or paused), since a network or power change pokes no one.
    func nextWakeDelay() -> TimeInterval {
        let now = clock.now
        var next = now.addingTimeInterval(Self.maximumSleep)
        if let held = try? store.nextHeldEvent() { next = min(next, held) }
        if let elapsed = periodicElapsed() {  // measured as enqueuePeriodicIfDue measures it (monotonic)
            next = min(next, now.addingTimeInterval(periodicWait(interval: periodicInterval()) - elapsed))
        }
        var waitingForConditions =
            (try? store.queued(dueAt: now).isEmpty) == false
            || (try? downloads.fetchCurrentDownloads().isEmpty) == false
        if launcher != nil {
            for request in scheduler.pendingTaskRequests() {
                let start = scheduler.earliestStart(of: request) ?? now
                if start <= now { waitingForConditions = true } else { next = min(next, start) }
            }
        }
        var delay = next.timeIntervalSince(now)
        if waitingForConditions { delay = min(delay, configuration.pollInterval) }
        return max(0, min(delay, Self.maximumSleep))
    }

    /// One round: queued events, the periodic check when it is due, due tasks.
    public func round() async {
        if !isStopping { reclaimSpaceIfLow() }
        if !isStopping { enqueueLanguageChangeIfChanged() }
        await runQueuedEvents()
        if !isStopping && conditions.current().networkAvailable { downloads.resumeScheduled() }
        if !isStopping { enqueuePeriodicIfDue() }
        if !isStopping, let launcher { launcher.launchDue(scheduler: scheduler) }
    }
}

extension Agent {
    /// Low disk space: under `BacklotMinimumFreeSpace` free on the container's file system, what
    /// nobody needs is deleted (``ClientContainer/reclaimSpace(minimumFree:)``), and each is logged.
    func reclaimSpaceIfLow() {
        do {
            for item in try manager.reclaimSpace(minimumFree: configuration.minimumFreeSpace) {
                switch item {
                case .urlDownload(let id, let bytes):
                    log("low space: deleted the finished file of download \(id) nobody claimed (\(bytes) bytes)")
                case .pack(let id, let bytes):
                    log("low space: deleted pack \(id) (\(bytes) bytes; neither essential nor in use)")
                }
            }
        } catch {
            log("low space: could not free space: \(error)")
        }
    }
}
