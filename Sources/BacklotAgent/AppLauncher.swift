import BacklotBasics
import BacklotContainer
import BacklotTaskScheduler
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Launches the app in the background for a due task, as iOS does, when the app is not running.
///
/// The app is started as `EXECUTABLE [BacklotAppArguments…] --background-task ID` with the
/// environment `BACKLOT_BACKGROUND_TASK=ID`, `BACKLOT_CONTAINER=DIR` and `BACKLOT_CONFIG=FILE`
/// (so that ``TaskScheduler/shared`` reads the same permitted identifiers and requests). The app
/// registers its handlers, calls ``TaskScheduler/runBackgroundLaunch()`` and exits. An app that
/// exits without running the task gets a failure recorded (so it is not launched again at
/// once); one still running well past its task's budget and grace period is killed.
///
/// The app runs as a ``ChildProcess``: in a process group of its own, recorded in the agent's
/// store before it runs (a crashed agent's launch is ended by the next one), killed as a group at
/// its deadline, which is measured on the monotonic clock. One app process at a time: the app is
/// never started twice, even for two due tasks before the first launch has taken its lock.
final class AppLauncher: Sendable {
    let executable: String
    let arguments: [String]
    let containerPath: String
    let configPath: String
    let store: AgentStore
    let log: @Sendable (String) -> Void
    private let running = Mutex<[String: Launched]>([:])

    struct Launched {
        let child: ChildProcess
        let kind: TaskKind
        /// The wall-clock start, for the task's history.
        let started: Date
        var stopping = false
    }

    init(
        executable: String, arguments: [String], containerPath: String, configPath: String, store: AgentStore,
        log: @escaping @Sendable (String) -> Void
    ) {
        self.executable = executable
        self.arguments = arguments
        self.containerPath = containerPath
        self.configPath = configPath
        self.store = store
        self.log = log
    }

    /// What a launch is recorded as in the agent's store (``Supervisor``): `app:KIND:ID`.
    static func recordName(_ kind: TaskKind, _ identifier: String) -> String { "app:\(kind.rawValue):\(identifier)" }

    /// Launches the app for the first due request, unless it runs already (launched by the agent
    /// or not): the app, once running, runs its other due tasks itself.
    func launchDue(scheduler: TaskScheduler) {
        if running.withLock({ !$0.isEmpty }) { return }
        if AppPresence.isRunning(containerPath: containerPath) { return }  // the running app's scheduler runs them
        guard let request = scheduler.dueTaskRequests().first else { return }
        launch(request, scheduler: scheduler)
    }

    func launch(_ request: TaskRequest, scheduler: TaskScheduler) {
        var env = ProcessInfo.processInfo.environment
        env["BACKLOT_BACKGROUND_TASK"] = request.identifier
        env["BACKLOT_CONTAINER"] = containerPath
        env["BACKLOT_CONFIG"] = configPath
        let kind: TaskKind = request is ProcessingTaskRequest ? .processing : .refresh
        let id = request.identifier
        let started = Date()
        let child: ChildProcess
        do {
            child = try Supervisor.start(
                executable: executable, arguments: arguments + ["--background-task", id], environment: env,
                captureOutput: false, what: Self.recordName(kind, id), event: nil, store: store)
        } catch {
            log("task \(id): could not launch the app: \(error)")
            scheduler.recordOutcome(forTaskWithIdentifier: id, kind: kind, started: started, outcome: .failure)
            return
        }
        running.withLock { $0[id] = Launched(child: child, kind: kind, started: started) }
        log("task \(id): launched the app in the background (pid \(child.pid))")
        let budget =
            (kind == .refresh ? scheduler.configuration.refreshBudget : scheduler.configuration.processingBudget)
            + scheduler.configuration.expirationGrace + 5
        let deadline = child.started + .milliseconds(Int64((budget * 1000).rounded(.up)))
        let log = self.log
        let store = self.store
        // Waits for the app's process until the task's budget has passed.
        BlockingPool.longRunning.submit { [self] in
            let outcome = child.wait(until: deadline)
            Supervisor.finished(child, store: store)
            let stopping = self.running.withLock { $0.removeValue(forKey: id)?.stopping ?? false }
            if stopping {
                return  // stopAll records how it ended
            } else if outcome.timedOut {
                scheduler.recordOutcome(forTaskWithIdentifier: id, kind: kind, started: started, outcome: .killed)
                log("task \(id): the app ran past the task's budget and was killed")
            } else if !scheduler.history(forTaskWithIdentifier: id).contains(where: { $0.ended >= started }) {
                scheduler.recordOutcome(forTaskWithIdentifier: id, kind: kind, started: started, outcome: .failure)
                log(
                    "task \(id): the app exited (\(outcome.signal.map { "signal \($0)" } ?? "status \(outcome.exitStatus ?? -1)")) without running the task"
                )
            } else {
                log(
                    "task \(id): the app finished (\(scheduler.history(forTaskWithIdentifier: id).last?.outcome.rawValue ?? "unknown"))"
                )
            }
        }
    }

    /// Stops apps still running for tasks (the agent is stopping): SIGTERM to each app's process
    /// group, SIGKILL 3 s later (monotonic) for those still running; each run is recorded as
    /// killed unless the app recorded its outcome first.
    func stopAll(scheduler: TaskScheduler) {
        let launched = running.withLock { r -> [String: Launched] in
            for id in r.keys { r[id]?.stopping = true }
            return r
        }
        for (_, l) in launched { l.child.signalGroup(SIGTERM) }
        // A grace period to record their own outcome, then SIGKILL for those still running.
        let deadline = SuspendingClock.now + .seconds(3)
        // each watcher removes its app when it exits
        while SuspendingClock.now < deadline && !running.withLock({ $0.isEmpty }) { usleep(20_000) }
        for (id, l) in launched {
            if running.withLock({ $0[id] != nil }) { l.child.signalGroup(SIGKILL) }
            if !scheduler.history(forTaskWithIdentifier: id).contains(where: { $0.ended >= l.started }) {
                scheduler.recordOutcome(forTaskWithIdentifier: id, kind: l.kind, started: l.started, outcome: .killed)
            }
        }
        while !running.withLock({ $0.isEmpty }) { usleep(20_000) }  // reaped, and their records removed
    }
}
