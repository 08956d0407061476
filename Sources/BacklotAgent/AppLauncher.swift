import BacklotBasics
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
final class AppLauncher: Sendable {
    let executable: String
    let arguments: [String]
    let containerPath: String
    let configPath: String
    let log: @Sendable (String) -> Void
    private let running = Mutex<[String: Launched]>([:])

    struct Launched {
        let pid: Int32
        let kind: TaskKind
        let started: Date
        var stopping = false
    }

    init(executable: String, arguments: [String], containerPath: String, configPath: String, log: @escaping @Sendable (String) -> Void) {
        self.executable = executable
        self.arguments = arguments
        self.containerPath = containerPath
        self.configPath = configPath
        self.log = log
    }

    /// Launches the app for each due request (one at a time per identifier), unless it runs already.
    func launchDue(scheduler: TaskScheduler) {
        for request in scheduler.dueTaskRequests() {
            if running.withLock({ $0[request.identifier] != nil }) { continue }
            if AppPresence.isRunning(containerPath: containerPath) { return }   // the running app's scheduler runs it
            launch(request, scheduler: scheduler)
        }
    }

    func launch(_ request: TaskRequest, scheduler: TaskScheduler) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments + ["--background-task", request.identifier]
        var env = ProcessInfo.processInfo.environment
        env["BACKLOT_BACKGROUND_TASK"] = request.identifier
        env["BACKLOT_CONTAINER"] = containerPath
        env["BACKLOT_CONFIG"] = configPath
        p.environment = env
        p.standardInput = FileHandle.nullDevice
        let started = Date()
        do { try p.run() } catch {
            log("task \(request.identifier): could not launch the app: \(error)")
            scheduler.recordOutcome(forTaskWithIdentifier: request.identifier, kind: request is ProcessingTaskRequest ? .processing : .refresh,
                                    started: started, outcome: .failure)
            return
        }
        let kind: TaskKind = request is ProcessingTaskRequest ? .processing : .refresh
        let id = request.identifier
        running.withLock { $0[id] = Launched(pid: p.processIdentifier, kind: kind, started: started) }
        log("task \(id): launched the app in the background (pid \(p.processIdentifier))")
        let budget = (kind == .refresh ? scheduler.configuration.refreshBudget : scheduler.configuration.processingBudget)
            + scheduler.configuration.expirationGrace + 5
        let log = self.log
        DispatchQueue.global().async { [self] in
            var killed = false
            while p.isRunning {
                if Date().timeIntervalSince(started) > budget {
                    kill(p.processIdentifier, SIGKILL)
                    killed = true
                    break
                }
                usleep(20_000)
            }
            p.waitUntilExit()
            let stopping = self.running.withLock { $0.removeValue(forKey: id)?.stopping ?? false }
            if stopping {
                return   // stopAll records how it ended
            } else if killed {
                scheduler.recordOutcome(forTaskWithIdentifier: id, kind: kind, started: started, outcome: .killed)
                log("task \(id): the app ran past the task's budget and was killed")
            } else if !scheduler.history(forTaskWithIdentifier: id).contains(where: { $0.ended >= started }) {
                scheduler.recordOutcome(forTaskWithIdentifier: id, kind: kind, started: started, outcome: .failure)
                log("task \(id): the app exited (status \(p.terminationStatus)) without running the task")
            } else {
                log("task \(id): the app finished (\(scheduler.history(forTaskWithIdentifier: id).last?.outcome.rawValue ?? "unknown"))")
            }
        }
    }

    /// Stops apps still running for tasks (the agent is stopping): SIGTERM, and each run is
    /// recorded as killed unless the app recorded its outcome first.
    func stopAll(scheduler: TaskScheduler) {
        let launched = running.withLock { r -> [String: Launched] in
            for id in r.keys { r[id]?.stopping = true }
            return r
        }
        for (_, l) in launched { kill(l.pid, SIGTERM) }
        // A grace period to record their own outcome, then SIGKILL for those still running.
        let deadline = Date().addingTimeInterval(3)
        while Date() < deadline && !running.withLock({ $0.isEmpty }) { usleep(20_000) }   // each watcher removes its app when it exits
        for (id, l) in launched {
            if running.withLock({ $0[id] != nil }) { kill(l.pid, SIGKILL) }
            if !scheduler.history(forTaskWithIdentifier: id).contains(where: { $0.ended >= l.started }) {
                scheduler.recordOutcome(forTaskWithIdentifier: id, kind: l.kind, started: l.started, outcome: .killed)
            }
        }
    }
}
