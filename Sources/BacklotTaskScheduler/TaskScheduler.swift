import BacklotBasics
import BacklotContainer
import BacklotInfoPlist
import Dispatch
import Foundation
import Synchronization

/// Schedules background work and launches it under conditions (Apple's `BGTaskScheduler`).
///
/// Register a launch handler for each permitted identifier once, when the app starts; submit
/// requests; the scheduler launches a task when its request is due (not before its
/// `earliestBeginDate`, not while its conditions are unmet, not while it is held back after
/// failures). Pending requests persist in the container's `tasks.sqlite`, so the background agent
/// sees them and launches the app for them when it is not running.
///
/// ```swift
/// let scheduler = TaskScheduler.shared
/// scheduler.register(forTaskWithIdentifier: "com.example.game.refresh", using: nil) { task in
///     task.expirationHandler = { /* stop */ }
///     refreshCatalog { ok in task.setTaskCompleted(success: ok) }
/// }
/// try scheduler.submit(AppRefreshTaskRequest(identifier: "com.example.game.refresh"))
/// ```
///
/// The rules: an identifier not in `BGTaskSchedulerPermittedIdentifiers` is refused
/// (`register` returns false, `submit` throws ``Error/Code/notPermitted``); registering an
/// identifier twice stops the process, as on iOS; resubmitting an identifier replaces its pending
/// request; at most 1 refresh and 10 processing requests are pending
/// (``Error/Code/tooManyPendingTaskRequests``); in an App Clip everything answers
/// ``Error/Code/unavailable``. Conditions: processing requests wait for what they require
/// (network, external power); every task waits while a discharging battery is low (as Low Power
/// Mode stops background work) and refresh tasks wait for a network. After `n` failures in a row a
/// request is held back `failureBackoff × 2^(n-1)` seconds (at most a day) after the last one.
public final class TaskScheduler: Sendable {
    public let configuration: TaskSchedulerConfiguration
    /// Where it reads the time: the wall clock for calendar facts, the monotonic clock for durations.
    public let clock: any TaskSchedulerClock
    let conditions: any DeviceConditionSource
    let store: TaskStore
    private let state = Mutex<State>(State())

    struct Registration {
        let queue: DispatchQueue?
        let handler: @Sendable (BackgroundTask) -> Void
    }

    struct Running {
        let task: BackgroundTask
        let queue: DispatchQueue
        /// When it was started and expired, on the monotonic clock (``TaskSchedulerClock/uptime``).
        let startedUptime: TimeInterval
        var expiredAt: TimeInterval?
    }

    struct State {
        var handlers: [String: Registration] = [:]
        var running: [String: Running] = [:]
        /// The app has finished launching (``finishLaunching()``): registrations are refused.
        var launchFinished = false
    }

    /// - Parameters:
    ///   - clock: the time (``ManualClock`` in tests).
    ///   - conditions: network and power (``ManualConditions`` in tests).
    /// - Throws: ``BacklotError`` when the database cannot be opened.
    public init(
        configuration: TaskSchedulerConfiguration, clock: any TaskSchedulerClock = SystemClock(),
        conditions: any DeviceConditionSource = LinuxDeviceConditions()
    ) throws {
        self.configuration = configuration
        self.clock = clock
        self.conditions = conditions
        store = try TaskStore(path: configuration.databasePath ?? ":memory:")
    }

    // MARK: The shared scheduler

    private static let sharedInstance = Mutex<TaskScheduler?>(nil)

    /// The process's scheduler. Unless ``configureShared(_:)`` set one first, it is made from the
    /// environment: `BACKLOT_CONTAINER` (requests are kept in its `tasks.sqlite`) and
    /// `BACKLOT_CONFIG` (a JSON configuration or an Info.plist with
    /// `BGTaskSchedulerPermittedIdentifiers`), which the agent sets when it launches the app;
    /// without them, no identifier is permitted.
    public static var shared: TaskScheduler {
        sharedInstance.withLock { current in
            if let current { return current }
            let env = ProcessInfo.processInfo.environment
            func warn(_ text: String) { FileHandle.standardError.write(Data("TaskScheduler: \(text)\n".utf8)) }
            var settings: [String: PlistValue] = [:]
            if let path = env["BACKLOT_CONFIG"] {
                do { settings = try ConfigurationFile.read(path: path).dictionary ?? [:] } catch {
                    warn("BACKLOT_CONFIG cannot be read, so no task identifier is permitted: \(error)")
                }
            }
            let db = env["BACKLOT_CONTAINER"].map { ContainerLayout(root: $0).tasksDatabase }
            var config = TaskSchedulerConfiguration(permittedIdentifiers: [], databasePath: db)
            do {
                config = try TaskSchedulerConfiguration(
                    settings: settings, source: env["BACKLOT_CONFIG"] ?? "environment", databasePath: db)
            } catch { warn("\(error); no task identifier is permitted") }
            if db == nil { warn("BACKLOT_CONTAINER is not set: task requests are kept in memory and lost at exit") }
            do {
                let made = try TaskScheduler(configuration: config)
                current = made
                return made
            } catch {
                warn("the task database cannot be opened (\(error)); task requests are kept in memory and lost at exit")
                config.databasePath = nil
                let made = try! TaskScheduler(configuration: config)  // an in-memory SQLite database opens
                current = made
                return made
            }
        }
    }

    /// Makes `scheduler` the one ``shared`` returns.
    public static func configureShared(_ scheduler: TaskScheduler) {
        sharedInstance.withLock { $0 = scheduler }
    }

    /// The identifier the agent launched this process for (`BACKLOT_BACKGROUND_TASK`), or nil for a normal launch.
    public static var backgroundLaunchIdentifier: String? {
        ProcessInfo.processInfo.environment["BACKLOT_BACKGROUND_TASK"]
    }

    // MARK: Registering and submitting

    /// Registers the handler that runs the task with this identifier.
    /// - Parameters:
    ///   - queue: where the handler runs (nil: a background queue).
    /// Handlers are registered while the app launches, as Apple requires ("all launch handlers
    /// must be registered before the application finishes launching"): once the launch has
    /// finished (``finishLaunching()``, which ``start(every:)`` and ``runBackgroundLaunch()`` call),
    /// a registration is refused — it returns false and is reported on standard error — since a
    /// handler registered later would miss the background launch it was meant for.
    /// - Returns: false when the identifier is not permitted (or in an App Clip), or the launch has finished.
    /// - Precondition: the identifier is registered once; a second registration stops the process.
    @discardableResult
    public func register(
        forTaskWithIdentifier identifier: String, using queue: DispatchQueue?,
        launchHandler: @escaping @Sendable (BackgroundTask) -> Void
    ) -> Bool {
        guard !configuration.isAppClip, configuration.permittedIdentifiers.contains(identifier) else { return false }
        enum Outcome { case registered, twice, late }
        let outcome = state.withLock { s -> Outcome in
            if s.handlers[identifier] != nil { return .twice }
            if s.launchFinished { return .late }
            s.handlers[identifier] = Registration(queue: queue, handler: launchHandler)
            return .registered
        }
        if outcome == .late {
            FileHandle.standardError.write(
                Data(
                    "TaskScheduler: \(identifier) was registered after the app finished launching; register every launch handler before calling start() or runBackgroundLaunch()\n"
                        .utf8))
            return false
        }
        if outcome == .twice {
            fatalError(
                "TaskScheduler: a launch handler for \(identifier) is already registered; register each task identifier once, when the app starts"
            )
        }
        return true
    }

    /// Submits a request; a pending request with the same identifier is replaced.
    /// - Throws: ``Error`` with ``Error/Code/notPermitted``, ``Error/Code/tooManyPendingTaskRequests``
    ///   or ``Error/Code/unavailable``.
    public func submit(_ taskRequest: TaskRequest) throws {
        if configuration.isAppClip {
            throw Error(
                .unavailable, "background tasks are unavailable in an App Clip", identifier: taskRequest.identifier)
        }
        guard configuration.permittedIdentifiers.contains(taskRequest.identifier) else {
            throw Error(
                .notPermitted,
                "the identifier is not in BGTaskSchedulerPermittedIdentifiers; add it to the app's Info.plist or configuration",
                identifier: taskRequest.identifier)
        }
        try store.submit(taskRequest, now: clock.now)
        // The agent that launches the app for due tasks sleeps until its next due time: wake it.
        if let database = configuration.databasePath {
            let folder = String(
                decoding: database.utf8.reversed().drop { $0 != BytePath.separator }.reversed().dropLast(),
                as: UTF8.self)
            WakeChannel.poke(path: ContainerLayout(root: folder).agentWakeChannel)
        }
    }

    /// Cancels the pending request with this identifier, if there is one.
    public func cancel(taskRequestWithIdentifier identifier: String) {
        try? store.cancel(identifier)
    }

    /// Submits a request without blocking the caller (Apple's iOS 27 `submitTaskRequest(_:completionHandler:)`,
    /// which replaces ``submit(_:)``): `completionHandler` runs on a background queue with nil, or
    /// with the error ``submit(_:)`` throws.
    ///
    /// ```swift
    /// BGTaskScheduler.shared.submitTaskRequest(request) { error in
    ///     if let error { print("Could not schedule: \(error)") }
    /// }
    /// ```
    public func submitTaskRequest(
        _ taskRequest: TaskRequest, completionHandler: @escaping @Sendable ((any Swift.Error)?) -> Void
    ) {
        DispatchQueue.global().async {
            do {
                try self.submit(taskRequest)
                completionHandler(nil)
            } catch {
                completionHandler(error)
            }
        }
    }

    /// Submits a request (Apple's iOS 27 `submitTaskRequest(_:) async throws`), off the caller's thread.
    /// - Throws: what ``submit(_:)`` throws.
    public func submitTaskRequest(_ taskRequest: TaskRequest) async throws {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Swift.Error>) in
            submitTaskRequest(taskRequest) { error in
                if let error { done.resume(throwing: error) } else { done.resume() }
            }
        }
    }

    /// Cancels every pending request.
    public func cancelAllTaskRequests() {
        try? store.cancelAll()
    }

    /// Copies of the pending requests.
    public func pendingTaskRequests() -> [TaskRequest] {
        (try? store.pending()) ?? []
    }

    /// Copies of the pending requests, handed to `completionHandler` on a background queue (Apple's form).
    public func getPendingTaskRequests(completionHandler: @escaping @Sendable ([TaskRequest]) -> Void) {
        let requests = pendingTaskRequests()
        DispatchQueue.global().async { completionHandler(requests) }
    }

    // MARK: Deciding

    /// When a request may begin, given its earliest begin date (a calendar fact, on the wall
    /// clock) and the back-off after failures (a duration, measured on the monotonic clock from
    /// the last failure's end, so that a step of the wall clock neither stretches nor skips it).
    public func earliestStart(of request: TaskRequest) -> Date? {
        var start = request.earliestBeginDate
        let runs = (try? store.runs(request.identifier, last: 20)) ?? []
        let failures = runs.reversed().prefix { $0.outcome.isFailure }
        if let last = failures.first {
            let hold = min(configuration.failureBackoff * pow(2, Double(failures.count - 1)), 86_400)
            let elapsed = (last.endedReading ?? ClockReading(wall: last.ended, uptime: -1, bootID: "")).elapsed(
                until: clock)
            let after = clock.now.addingTimeInterval(hold - elapsed)
            start = max(start ?? after, after)
        }
        return start
    }

    /// Whether a request may begin now: due, and its conditions met.
    public func isDue(_ request: TaskRequest, conditions now: DeviceConditions? = nil) -> Bool {
        let c = now ?? conditions.current()
        if let start = earliestStart(of: request), start > clock.now { return false }
        if c.batteryLow && !c.onExternalPower { return false }
        switch request {
        case let p as ProcessingTaskRequest:
            if p.requiresNetworkConnectivity && !c.networkAvailable { return false }
            if p.requiresExternalPower && !c.onExternalPower { return false }
        default:
            if !c.networkAvailable { return false }
        }
        return true
    }

    /// The pending requests that may begin now (the agent launches the app for these).
    public func dueTaskRequests() -> [TaskRequest] {
        let c = conditions.current()
        return pendingTaskRequests().filter { isDue($0, conditions: c) }
    }

    // MARK: Running

    /// Launches every due task whose handler is registered in this process, expires tasks past
    /// their budget and marks failed those past the grace period. Call it periodically, or use
    /// ``start(every:)``.
    /// - Returns: the identifiers launched.
    @discardableResult
    public func runDueTasks() -> [String] {
        expireOverdue()
        let registered = state.withLock { Set($0.handlers.keys) }
        var launched: [String] = []
        let c = conditions.current()
        for request in pendingTaskRequests()
        where registered.contains(request.identifier) && isDue(request, conditions: c) {
            if launch(request.identifier) { launched.append(request.identifier) }
        }
        return launched
    }

    /// Claims the pending request and runs its handler.
    @discardableResult
    func launch(_ identifier: String) -> Bool {
        guard state.withLock({ $0.handlers[identifier] != nil && $0.running[identifier] == nil }),
            let request = try? store.claim(identifier)
        else { return false }
        start(identifier, kind: request.kind)
        return true
    }

    private func start(_ identifier: String, kind: TaskKind) {
        let now = clock.now
        let onComplete: @Sendable (BackgroundTask, TaskOutcome) -> Void = { [weak self] task, outcome in
            guard let self else { return }
            try? self.store.record(
                TaskRun(
                    identifier: task.identifier, kind: task.kind, started: task.started, ended: self.clock.now,
                    outcome: outcome,
                    endedReading: ClockReading(self.clock)))
            self.state.withLock { s in
                if s.running[task.identifier]?.task === task { s.running[task.identifier] = nil }
            }
        }
        let task: BackgroundTask =
            kind == .refresh
            ? AppRefreshTask(identifier: identifier, kind: kind, started: now, onComplete: onComplete)
            : ProcessingTask(identifier: identifier, kind: kind, started: now, onComplete: onComplete)
        let registration: Registration? = state.withLock { s in
            guard let r = s.handlers[identifier] else { return nil }
            s.running[identifier] = Running(
                task: task, queue: r.queue ?? DispatchQueue.global(), startedUptime: clock.uptime, expiredAt: nil)
            return r
        }
        guard let registration else { return }
        (registration.queue ?? DispatchQueue.global()).async { registration.handler(task) }
    }

    private func expireOverdue() {
        let now = clock.uptime  // budgets and grace periods are durations: on the monotonic clock
        let running = state.withLock { Array($0.running.values) }
        for r in running {
            if let at = r.expiredAt {
                if now >= at + configuration.expirationGrace { r.task.finish(.killed) }
            } else if now >= r.startedUptime + configuration.budget(r.task.kind) {
                expire(r.task.identifier)
            }
        }
    }

    private func expire(_ identifier: String) {
        guard let r = state.withLock({ $0.running[identifier] }) else { return }
        switch r.task.expire() {
        case .nothing:
            return
        case .markFailed:
            r.task.finish(.expired)
        case .call(let handler):
            let now = clock.uptime
            state.withLock { s in s.running[identifier]?.expiredAt = now }
            r.queue.async { handler() }
        }
    }

    /// The identifiers of the tasks running in this process.
    public var runningTaskIdentifiers: [String] {
        state.withLock { $0.running.keys.sorted() }
    }

    /// The finished runs, oldest first (of one identifier, or all).
    public func history(forTaskWithIdentifier identifier: String? = nil) -> [TaskRun] {
        (try? store.runs(identifier)) ?? []
    }

    // MARK: Test hooks (Apple's LLDB `_simulateLaunchForTaskWithIdentifier:` and `_simulateExpirationForTaskWithIdentifier:`)

    /// Launches the task now, whatever its earliest begin date and conditions.
    /// - Returns: false when no handler is registered or no request is pending for it.
    @discardableResult
    public func simulateLaunch(forTaskWithIdentifier identifier: String) -> Bool {
        launch(identifier)
    }

    /// Runs out the running task's time now: its expiration handler is called (or, with none, it is marked failed).
    public func simulateExpiration(forTaskWithIdentifier identifier: String) {
        expire(identifier)
    }

    // MARK: Loops

    private let timer = Mutex<RepeatingTimer?>(nil)

    /// Calls ``runDueTasks()`` every `interval` seconds until ``stop()``.
    public func start(every interval: TimeInterval = 1) {
        finishLaunching()
        let t = RepeatingTimer(label: "backlot.task-scheduler", every: interval, after: 0) { [weak self] in
            self?.runDueTasks()
        }
        timer.withLock {
            $0?.cancel()
            $0 = t
        }
    }

    /// Marks the app's launch as finished (Apple: the end of `application(_:didFinishLaunchingWithOptions:)`):
    /// later ``register(forTaskWithIdentifier:using:launchHandler:)`` calls are refused.
    public func finishLaunching() {
        state.withLock { $0.launchFinished = true }
    }

    public func stop() {
        timer.withLock {
            $0?.cancel()
            $0 = nil
        }
    }

    /// Blocks until no task runs in this process, expiring tasks as their time runs out.
    public func waitUntilIdle(polling interval: TimeInterval = 0.05) {
        while !runningTaskIdentifiers.isEmpty {
            expireOverdue()
            Thread.sleep(forTimeInterval: interval)
        }
    }

    /// In a process the agent launched for a task (``backgroundLaunchIdentifier``): runs that task
    /// with its registered handler, waits until it completes or runs out of time, and returns how it ended.
    /// Call it after registering the handlers.
    /// - Returns: nil when this is not a background launch, or the request was no longer pending.
    @discardableResult
    public func runBackgroundLaunch() -> TaskOutcome? {
        finishLaunching()
        guard let identifier = Self.backgroundLaunchIdentifier, launch(identifier) else { return nil }
        waitUntilIdle()
        return history(forTaskWithIdentifier: identifier).last?.outcome
    }

    // MARK: For the agent, which launches the app for due tasks

    /// Records how a task ended that this process did not run: the app the agent launched for it
    /// never took the request (it is removed, so that the launch is not repeated at once), or
    /// overran and was killed.
    public func recordOutcome(
        forTaskWithIdentifier identifier: String, kind: TaskKind, started: Date, outcome: TaskOutcome
    ) {
        _ = try? store.claim(identifier, submittedBefore: started)  // not one the app resubmitted while it ran
        try? store.record(
            TaskRun(
                identifier: identifier, kind: kind, started: started, ended: clock.now, outcome: outcome,
                endedReading: ClockReading(clock)))
    }

    /// Whether a request with this identifier is pending.
    public func isPending(_ identifier: String) -> Bool {
        ((try? store.pending(identifier)) ?? nil) != nil
    }

    // MARK: App usage (for the agent's periodic checks)

    /// Records a launch of the app (the agent checks for updates more often for apps used daily).
    public func recordAppLaunch() {
        try? store.recordLaunch(at: clock.now)
    }

    /// The app's launches in the last `days` days.
    public func appLaunches(inLast days: Int) -> [Date] {
        (try? store.launches(since: clock.now.addingTimeInterval(-Double(days) * 86_400))) ?? []
    }
}
