import BacklotBasics
import BacklotContainer
import BacklotClient
import BacklotExtension
import BacklotFormat
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
    private let state = Mutex<State>(State())
    let stopFlag: StopFlag
    /// One agent per container, for as long as this one lives.
    let lock: AgentLock
    /// Outcomes being handed to the extension.
    let handoffs: DispatchGroup
    /// What the loop sleeps on between rounds: poked by `notify`, an app that schedules a download
    /// or submits a task, and ``stop()``.
    let wake: WakeChannel

    struct State {
        var progresses: [String: ProgressRef] = [:]
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
    public init(containerPath: String, configuration: AgentConfiguration, conditions: (any DeviceConditionSource)? = nil,
                clock: any TaskSchedulerClock = SystemClock(), lock heldLock: AgentLock? = nil,
                log: @escaping @Sendable (String) -> Void = { _ in }) throws {
        let path = URL(fileURLWithPath: containerPath).standardizedFileURL.path
        guard let lock = try heldLock ?? AgentLock.tryAcquire(containerPath: path) else {
            throw BacklotError(.alreadyExists, "another agent runs for this container", context: path,
                               hint: "stop it first, or use backlot notify to queue events for it")
        }
        self.lock = lock
        self.containerPath = path
        wake = try WakeChannel(path: ContainerLayout(root: path).agentWakeChannel)
        self.configuration = configuration
        self.log = log
        self.clock = clock
        self.conditions = CachedConditions(conditions ?? LinuxDeviceConditions(meteredFallback: configuration.networkMetered))
        let store = try AgentStore(containerPath: path)
        self.store = store
        var schedulerConfig = configuration.scheduler
        schedulerConfig.databasePath = ContainerLayout(root: path).tasksDatabase
        scheduler = try TaskScheduler(configuration: schedulerConfig, clock: clock, conditions: self.conditions)
        manager = try AssetPackManager(configuration: configuration.managerConfiguration(containerPath: path))
        let stopFlag = StopFlag()
        self.stopFlag = stopFlag
        let runner = configuration.extensionPath.map {
            ExtensionRunner(executable: $0, containerPath: path, store: store, timeLimit: configuration.extensionTimeLimit,
                            dailyBudget: configuration.extensionDailyBudget, log: log, isStopping: { stopFlag.isSet })
        }
        extensionRunner = runner
        launcher = configuration.appExecutable.map { executable in
            AppLauncher(executable: executable, arguments: configuration.appArguments, containerPath: path, configPath: configuration.sourcePath,
                        store: store, log: log)
        }
        // What a crashed agent left running: its extension call or background launch is ended
        // (before anything here starts a child), the extension calls' files removed, and an app
        // it launched is recorded as killed, so that its task is not launched a second time at once.
        for child in Supervisor.endLeftovers(store: store, containerPath: path, log: log) where child.what.hasPrefix("app:") {
            let parts = child.what.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count == 3, let kind = TaskKind(rawValue: parts[1]) else { continue }
            scheduler.recordOutcome(forTaskWithIdentifier: parts[2], kind: kind, started: child.started, outcome: .killed)
        }
        let holder = DownloadManagerHolder()
        let handoffs = DispatchGroup()
        self.handoffs = handoffs
        downloads = try DownloadManager(containerPath: path, restrictions: configuration.restrictions, caFile: configuration.caFile,
                                        isAppClip: configuration.scheduler.isAppClip, role: .agent) { event in
            Agent.route(event, manager: holder.manager, runner: runner, handoffs: handoffs, log: log)
        }
        holder.manager = downloads
        // What a stopped or crashed agent left: reservations the extension did not take go to the
        // app; outcomes recorded and never handed over are routed now.
        try downloads.releaseUnfinishedReservations()
        try downloads.deliverRecordedOutcomes()
        try store.setValue("configPath", configuration.sourcePath)
        store.prune()
    }

    // MARK: URL download outcomes

    /// Decided under the exclusive lock: to the app if it listens (or there is no extension),
    /// else to the extension. For the extension, the outcome is posted *reserved* (its file moved
    /// aside) and the extension runs after the lock is released, one call at a time; when it has
    /// taken it, the reservation is closed, and when it cannot (its budget is used up, it fails, the
    /// agent stops or crashes first), the outcome goes to the app instead. Nothing is lost and
    /// nothing is delivered twice.
    static func route(_ event: DownloadManager.Event, manager: DownloadManager?, runner: ExtensionRunner?, handoffs: DispatchGroup,
                      log: @escaping @Sendable (String) -> Void) {
        guard let manager else { return }
        let d: URLDownload, call: (String, Int64) -> ExtensionCall, what: String
        switch event {
        case .began(let download):
            log("download \(download.identifier): started")
            return
        case .paused(let download):
            log("download \(download.identifier): paused (the connection failed); it goes on later")
            return
        case .progress:
            return
        case .finished(let download, _):
            d = download
            call = { path, seq in .finished(download, filePath: path, outcome: seq) }
            what = "finished"
        case .failed(let download, let error):
            d = download
            let code = (error as? BackgroundDownloadError)?.code ?? (error as? DownloadManager.DeliveredError)?.code
            call = { _, seq in .failed(download, message: "\(error)", code: code, outcome: seq) }
            what = "failed (\(error))"
        }
        if manager.appIsListening || runner == nil {
            do {
                try manager.postToApp(event)
                TestStopPoint.reach("handover.afterPost")
                log("download \(d.identifier): \(what), handed to the app")
            } catch {
                log("download \(d.identifier): \(what), but it could not be handed to the app: \(error)")
            }
            return
        }
        guard let runner else { return }
        let seq: Int64
        do {
            seq = try manager.postToApp(event, reservedForExtension: true)
        } catch {
            log("download \(d.identifier): \(what), but it could not be kept for the extension: \(error)")
            return
        }
        TestStopPoint.reach("handover.afterPost")
        let extensionCall = call(manager.postedFile(seq)?.path ?? "", seq)
        handoffs.enter()
        DispatchQueue.global().async {
            defer { handoffs.leave() }
            do {
                TestStopPoint.reach("handover.beforeExtension", parksOnTerm: false)
                _ = try runner.call(extensionCall, bypassBudget: false)
                TestStopPoint.reach("handover.afterExtension", parksOnTerm: false)
                try manager.completeReservation(seq, deliveredToExtension: true)
                log("download \(d.identifier): \(what), handed to the extension")
            } catch {
                try? manager.completeReservation(seq, deliveredToExtension: false)
                log("download \(d.identifier): \(what); the extension could not take it (\(error)), so it waits for the app")
            }
        }
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
        while !isStopping {
            await round()
            if isStopping { break }
            let delay = nextWakeDelay()
            let wake = self.wake
            // A blocking wait on a thread of its own, never on the cooperative pool.
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread.detachNewThread {
                    wake.wait(seconds: delay)
                    done.resume()
                }
            }
        }
        launcher?.stopAll(scheduler: scheduler)
        handoffs.wait()   // the stop flag ends extension calls at once; their outcomes go to the app
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
        if let elapsed = periodicElapsed() {   // measured as enqueuePeriodicIfDue measures it (monotonic)
            let interval = PeriodicCheckPolicy(baseInterval: configuration.periodicCheckInterval).interval(launches: scheduler.appLaunches(inLast: 30), now: now)
            next = min(next, now.addingTimeInterval(interval - elapsed))
        }
        var waitingForConditions = (try? store.queued(dueAt: now).isEmpty) == false || (try? downloads.fetchCurrentDownloads().isEmpty) == false
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
        await runQueuedEvents()
        if !isStopping && conditions.current().networkAvailable { downloads.resumeScheduled() }
        if !isStopping { enqueuePeriodicIfDue() }
        if !isStopping, let launcher { launcher.launchDue(scheduler: scheduler) }
    }

    /// Runs every queued event once (what `backlot notify` does when no agent runs).
    public func runQueuedEvents() async {
        for event in (try? store.queued(dueAt: clock.now)) ?? [] where !isStopping {
            await runQueued(event)
        }
    }

    /// Runs a queued event and records its outcome; one that could not finish (network, stop) stays queued.
    public func runQueued(_ event: AgentStore.Event) async {
        do {
            let report = try await process(event)
            try? store.finish(event.seq, state: "done", detail: Self.describe(report))
            log("event \(event.request.name): done — \(Self.describe(report))")
        } catch let e as Deferral {
            try? store.noteProblem(event.seq, code: "waiting", detail: e.reason)
            log("event \(event.request.name): waiting (\(e.reason))")
        } catch let e as BacklotError where e.code == .io || e.code == .cancelled {
            try? store.noteProblem(event.seq, code: e.code.name, detail: e.message)
            log("event \(event.request.name): will retry (\(e.message))")
        } catch let e as BacklotError where e.code == .tls {
            // Not the network: the server's certificate is not trusted. The event stays queued
            // (trust can be fixed without touching it) and says so, with what to trust.
            let text = e.message + (e.hint.map { "; \($0)" } ?? "")
            try? store.noteProblem(event.seq, code: e.code.name, detail: text)
            log("event \(event.request.name): TLS error, tried again later: \(text)")
        } catch {
            try? store.finish(event.seq, state: "failed", detail: "\(error)")
            log("event \(event.request.name): failed — \(error)")
        }
    }

    static func describe(_ r: EventReport) -> String {
        var parts = ["packs: \(r.packs.isEmpty ? "none" : r.packs.joined(separator: ", "))"]
        if !r.declined.isEmpty { parts.append("declined by the extension: \(r.declined.joined(separator: ", "))") }
        if !r.scheduled.isEmpty { parts.append("scheduled: \(r.scheduled.joined(separator: ", "))") }
        if !r.refused.isEmpty { parts.append("refused: \(r.refused.joined(separator: "; "))") }
        if !r.extensionFailures.isEmpty { parts.append("extension: \(r.extensionFailures.joined(separator: "; "))") }
        return parts.joined(separator: "; ")
    }

    /// Why an event waits.
    struct Deferral: Error { let reason: String }

    // MARK: Events

    /// Does what an event asks (see the type's summary). Idempotent: packs already installed are
    /// not fetched again, and the extension's `downloads(for:)` runs once per event.
    public func process(_ event: AgentStore.Event) async throws -> EventReport {
        var report = EventReport(request: event.request)
        try waitForNetwork(metered: true)
        // Before the app's first launch, the catalog's host must be allowed, and its bytes count.
        try downloads.checkHostBeforeFirstLaunch(manager.configuration.catalogURL)
        let offered = try await manager.allAssetPacks.sorted { $0.id < $1.id }
        try downloads.countCatalogFetch()
        if event.request != .periodic {
            let installEvent: InstallationEventType = event.request == .install ? .firstInstallation : .subsequentUpdate
            var candidates = offered.filter { $0.downloadPolicy.installationEventTypes.contains(installEvent) }
            if configuration.scheduler.isAppClip { candidates.removeAll { if case .essential = $0.downloadPolicy { true } else { false } } }
            // When the extension's budget is used up, the essential phase still runs (the budget
            // limits the extension's runtime, not the essential packs): every essential candidate is
            // kept, as when the call fails, and the rest of the event waits for the budget.
            var budgetWaits = false
            if let runner = extensionRunner, !candidates.isEmpty {
                // Asked once per event: a retry (network, stop) keeps the extension's answer.
                var accepted = try store.accepted(event.seq).map(Set.init)
                if accepted == nil {
                    do {
                        let call = ExtensionCall.shouldDownload(candidates), bypass = event.bypassBudget, seq = event.seq
                        let reply = try await BlockingWork.run { try runner.call(call, bypassBudget: bypass, event: seq) }
                        let kept = candidates.filter { !reply.declines($0) }.map(\.id)
                        try store.setAccepted(event.seq, kept)
                        accepted = Set(kept)
                    } catch let e as BacklotError where e.code == .budgetExhausted {
                        budgetWaits = true
                    } catch let e as BacklotError where e.code == .cancelled {
                        throw Deferral(reason: "stopping")
                    } catch {
                        report.extensionFailures.append("shouldDownload: \(error)")   // the default: every candidate
                        try store.setAccepted(event.seq, candidates.map(\.id))
                    }
                }
                if let accepted {
                    report.declined = candidates.map(\.id).filter { !accepted.contains($0) }
                    candidates.removeAll { !accepted.contains($0.id) }
                }
            }
            for pack in candidates where pack.downloadPolicy.name == "essential" {
                if let refusal = try refusalBeforeFirstLaunch(pack, essential: true) { report.refused.append(refusal); continue }
                try await fetch(pack, unmeteredOnly: false, essential: true)
                report.packs.append(pack.id)
            }
            if budgetWaits {
                try store.markEssentialDone(event.seq)   // downloads(for:) cannot run today
                try store.holdUntilTomorrow(event.seq, now: clock.now)
                throw Deferral(reason: "the extension's daily budget is used up; the essential packs are installed, the rest waits for the budget to renew")
            }
            let extensionWaits = try await runExtensionDownloads(event, into: &report)
            try await waitForEssentialDownloads(event)
            try store.markEssentialDone(event.seq)
            for pack in candidates where pack.downloadPolicy.name == "prefetch" {
                if let refusal = try refusalBeforeFirstLaunch(pack, essential: false) { report.refused.append(refusal); continue }
                try await fetch(pack, unmeteredOnly: configuration.prefetchRequiresUnmetered, essential: false)
                report.packs.append(pack.id)
            }
            if extensionWaits {
                try store.holdUntilTomorrow(event.seq, now: clock.now)
                throw Deferral(reason: "the extension's daily budget is used up; its downloads(for:) runs when the budget renews")
            }
        } else {
            if try await runExtensionDownloads(event, into: &report) {
                try store.holdUntilTomorrow(event.seq, now: clock.now)
                throw Deferral(reason: "the extension's daily budget is used up; the periodic check runs when it renews")
            }
            try waitForNetwork(metered: !configuration.prefetchRequiresUnmetered)
            let (updating, removed) = try await manager.checkForUpdates()
            report.packs = updating.sorted()
            if !removed.isEmpty { log("periodic: removed obsolete packs \(removed.sorted().joined(separator: ", "))") }
        }
        return report
    }

    /// The extension's `downloads(for:)`, once per event, with scheduling blocked while it runs.
    /// - Returns: true when it could not run because the daily budget is used up (the event waits).
    func runExtensionDownloads(_ event: AgentStore.Event, into report: inout EventReport) async throws -> Bool {
        guard let runner = extensionRunner, !event.extensionDone else { return false }
        if !event.bypassBudget && runner.remainingBudget() < 1 { return true }
        let manifest = try writeManifestCopy()
        defer { unlink(manifest) }
        let info = AppExtensionInfo(restrictedDownloadSizeRemaining: downloads.remainingAllowance(essential: false),
                                    restrictedEssentialDownloadSizeRemaining: downloads.remainingAllowance(essential: true))
        let returned: [URLDownload]
        do {
            let call = ExtensionCall.downloads(event.request, manifestPath: manifest, info), bypass = event.bypassBudget, seq = event.seq
            let downloads = self.downloads
            returned = try await BlockingWork.run {
                try downloads.blockingScheduling { try runner.call(call, bypassBudget: bypass, event: seq).downloads }
            }
        } catch let e as BacklotError where e.code == .budgetExhausted {
            return true
        } catch let e as BacklotError where e.code == .cancelled {
            throw Deferral(reason: "stopping")
        } catch {
            report.extensionFailures.append("downloads(for:): \(error)")
            try store.markExtensionDone(event.seq)
            return false
        }
        var essential: [String] = []
        for d in returned {
            if event.request == .periodic && d.isEssential {
                report.refused.append("\(d.identifier): a periodic request may only return non-essential downloads")
                continue
            }
            if configuration.scheduler.isAppClip && d.isEssential {
                report.refused.append("\(d.identifier): \(BackgroundDownloadError.essentialDownloadNotPermitted(d.identifier))")
                continue
            }
            do {
                try downloads.scheduleDownload(d)
                report.scheduled.append(d.identifier)
                if d.isEssential { essential.append(d.identifier) }
            } catch {
                report.refused.append("\(d.identifier): \(error)")
            }
        }
        try store.setEssentialDownloads(event.seq, essential)
        try store.markExtensionDone(event.seq)
        return false
    }

    /// The end of the essential phase: waits until the essential URL downloads the extension
    /// returned for the event have ended (finished or failed), running them meanwhile.
    /// - Throws: a ``Deferral`` when the network goes away or the agent stops (the event goes on later).
    func waitForEssentialDownloads(_ event: AgentStore.Event) async throws {
        let ids = Set(try store.essentialDownloads(event.seq))
        guard !ids.isEmpty else { return }
        while try downloads.fetchCurrentDownloads().contains(where: { ids.contains($0.identifier) }) {
            if isStopping { throw Deferral(reason: "stopping") }
            try waitForNetwork(metered: true)
            downloads.resumeScheduled()
            try? await Task.sleep(nanoseconds: 50_000_000)
        }
    }

    /// A read-only copy of the verified catalog for the extension (deleted after the call).
    func writeManifestCopy() throws -> String {
        let container = try ClientContainer(path: containerPath)
        guard let catalog = try container.lastVerifiedCatalog() else {
            throw BacklotError(.untrusted, "no verified catalog to give the extension", context: containerPath)
        }
        let folder = ContainerLayout(root: containerPath).extensionCallsFolder
        let path = folder + "/manifest-\(UUID().uuidString.lowercased()).json"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Data(catalog.json.prettyPrinted().utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o444)
        return path
    }

    /// Throws a ``Deferral`` while the network is unavailable (or metered, when `metered` is false).
    func waitForNetwork(metered: Bool) throws {
        let c = conditions.current()
        if !c.networkAvailable { throw Deferral(reason: "no network") }
        if !metered && c.networkMetered { throw Deferral(reason: "the network is metered; prefetch downloads wait for an unmetered one") }
    }

    /// Before the app's first launch, why a pack may not be fetched now, or nil: its archive's
    /// host must be on the allow list, and its download size (the most an install transfers; a
    /// delta transfers less) must fit in what is left of the allowance of its kind (essential packs:
    /// `BAEssentialDownloadAllowance`, prefetch packs: `BADownloadAllowance`).
    func refusalBeforeFirstLaunch(_ pack: AssetPack, essential: Bool) throws -> String? {
        guard downloads.remainingAllowance(essential: essential) != nil else { return nil }   // launched, or unrestricted
        do {
            let catalogURL = manager.configuration.catalogURL
            if let catalog = try ClientContainer(path: containerPath).lastVerifiedCatalog(),
               let entry = catalog.packs.first(where: { $0.id.rawValue == pack.id }),
               let archive = URL(string: entry.release(forDevice: manager.deviceID).archiveURL, relativeTo: catalogURL)?.absoluteURL {
                try downloads.checkHostBeforeFirstLaunch(archive)
            }
            try downloads.checkAllowance(bytes: UInt64(max(0, pack.downloadSize)), essential: essential)
            return nil
        } catch let e as BackgroundDownloadError {
            return "\(pack.id): \(e) (Apple's \(e.code == 202 ? 202 : 203) before the first launch)"
        }
    }

    /// Installs a pack, cancelling (chunks kept) when the network goes away or the agent stops;
    /// the bytes it downloaded (and the catalog it fetched) count against the allowance before the first launch.
    func fetch(_ pack: AssetPack, unmeteredOnly: Bool, essential: Bool = false) async throws {
        try waitForNetwork(metered: !unmeteredOnly)
        if isStopping { throw Deferral(reason: "stopping") }
        let updates = manager.statusUpdates(forAssetPackWithID: pack.id)
        let watcher = Task { [weak self] in
            for await update in updates {
                guard let self else { return }
                if case .downloading(_, let progress) = update {
                    self.state.withLock { $0.progresses[pack.id] = ProgressRef(progress) }
                    while !progress.isFinished && !progress.isCancelled && !Task.isCancelled {
                        let c = self.conditions.current()
                        if self.isStopping || !c.networkAvailable || (unmeteredOnly && c.networkMetered) { progress.cancel(); break }
                        try? await Task.sleep(nanoseconds: 50_000_000)
                    }
                }
            }
        }
        defer {
            watcher.cancel()
            state.withLock { _ = $0.progresses.removeValue(forKey: pack.id) }
        }
        do {
            let r = try await manager.fetch(packWithID: pack.id)
            log("pack \(pack.id): version \(r.version), \(r.downloadedBytes) bytes downloaded")
            try downloads.countTowardsAllowance(bytes: r.downloadedBytes, essential: essential)
            try downloads.countCatalogFetch()
        } catch let e as BacklotError where e.code == .cancelled {
            if isStopping { throw Deferral(reason: "stopping; verified chunks are kept") }
            try waitForNetwork(metered: !unmeteredOnly)
            throw e
        }
    }

    // MARK: Periodic checks

    func enqueuePeriodicIfDue() {
        let now = clock.now
        let policy = PeriodicCheckPolicy(baseInterval: configuration.periodicCheckInterval)
        let interval = policy.interval(launches: scheduler.appLaunches(inLast: 30), now: now)
        guard let elapsed = periodicElapsed() else {
            markPeriodicCheck()   // the first start sets the clock going
            return
        }
        guard elapsed >= interval else { return }
        markPeriodicCheck()
        if (try? store.queued().contains { $0.request == .periodic }) == true { return }
        _ = try? store.enqueue(.periodic, bypassBudget: false)
        log("periodic: a check is due (every \(CheckedInteger.secondsText(interval)) s for this app's use)")
    }

    /// Seconds since the last periodic check, on the monotonic clock within this boot (a step of
    /// the wall clock neither delays nor hastens the checks), on the wall clock across a reboot;
    /// nil when there was none yet. `lastPeriodic` is the check's wall-clock time;
    /// `lastPeriodicReading` ("WALL UPTIME BOOT") adds the monotonic reading, used only while it
    /// belongs to the same `lastPeriodic`.
    func periodicElapsed() -> TimeInterval? {
        let now = clock.now
        guard let text = (try? store.value("lastPeriodic")) ?? nil else { return nil }
        let parts = ((try? store.value("lastPeriodicReading")) ?? nil)?.split(separator: " ").map(String.init) ?? []
        if parts.count == 3, parts[0] == text, let wall = Double(text), wall.isFinite, let uptime = Double(parts[1]), uptime.isFinite,
           parts[2] == clock.bootID, uptime <= clock.uptime {
            return clock.uptime - uptime
        }
        // Stored text another process may have written: "nan", "inf" or a time in the future would
        // hold the checks back forever, so they count as no check yet.
        guard let last = Double(text), last.isFinite, last <= now.timeIntervalSince1970 else { return nil }
        return now.timeIntervalSince1970 - last
    }

    func markPeriodicCheck() {
        let wall = String(clock.now.timeIntervalSince1970)
        try? store.setValue("lastPeriodic", wall)
        try? store.setValue("lastPeriodicReading", "\(wall) \(clock.uptime) \(clock.bootID)")
    }
}

/// Lets the download handler reach its manager, created after the handler.
final class DownloadManagerHolder: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: DownloadManager?
    var manager: DownloadManager? {
        get { lock.lock(); defer { lock.unlock() }; return stored }
        set { lock.lock(); stored = newValue; lock.unlock() }
    }
}

/// Set once, when the agent stops (read by the extension runner to end a call early).
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}

/// Reads the conditions at most once a second (reading them may run `nmcli`).
final class CachedConditions: DeviceConditionSource {
    let source: any DeviceConditionSource
    private let cache = Mutex<(at: SuspendingClock.Instant, value: DeviceConditions)?>(nil)   // a duration: monotonic

    init(_ source: any DeviceConditionSource) {
        self.source = source
    }

    func current() -> DeviceConditions {
        if source is ManualConditions { return source.current() }   // tests change them at will
        if let c = cache.withLock({ $0 }), SuspendingClock.now - c.at < .seconds(1) { return c.value }
        let value = source.current()
        cache.withLock { $0 = (SuspendingClock.now, value) }
        return value
    }
}

/// A `Progress` the agent may cancel.
final class ProgressRef: @unchecked Sendable {
    let progress: Progress
    init(_ progress: Progress) { self.progress = progress }
}
