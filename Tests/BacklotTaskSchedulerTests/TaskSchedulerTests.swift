import BacklotBasics
import BacklotContainer
import BacklotInfoPlist
import BacklotStore
import BacklotTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import BacklotTaskScheduler

/// A scheduler on a manual clock and manual conditions, its database in a temporary folder.
struct Fixture {
    let dir: TemporaryDirectory
    let clock = ManualClock()
    let conditions = ManualConditions()
    let scheduler: TaskScheduler

    init(
        permitted: Set<String> = [
            "refresh", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "p10", "p11", "refresh2",
        ],
        configure: (inout TaskSchedulerConfiguration) -> Void = { _ in }
    ) throws {
        dir = try TemporaryDirectory("tasks")
        var config = TaskSchedulerConfiguration(permittedIdentifiers: permitted, databasePath: dir.at("tasks.sqlite"))
        configure(&config)
        scheduler = try TaskScheduler(configuration: config, clock: clock, conditions: conditions)
    }

    /// Another scheduler on the same database: a restart.
    func restarted() throws -> TaskScheduler {
        try TaskScheduler(configuration: scheduler.configuration, clock: clock, conditions: conditions)
    }
}

/// Records what handlers saw.
final class Log: Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ s: String) { lines.withLock { $0.append(s) } }
    var all: [String] { lines.withLock { $0 } }
}

/// Waits (polling) until `condition` holds, at most about 60 s of real time, which is not what is
/// measured (what it waits for runs on other threads, which a loaded machine may keep waiting).
func eventually(_ condition: () -> Bool) -> Bool {
    for _ in 0..<6_000 {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

@Suite struct TaskSchedulerRuleTests {
    @Test func permittedIdentifiersOnly() throws {
        let f = try Fixture(permitted: ["refresh"])
        defer { f.dir.remove() }
        #expect(f.scheduler.register(forTaskWithIdentifier: "other", using: nil) { _ in } == false)
        #expect(f.scheduler.register(forTaskWithIdentifier: "refresh", using: nil) { _ in })
        #expect(throws: TaskScheduler.Error.self) { try f.scheduler.submit(AppRefreshTaskRequest(identifier: "other")) }
        do {
            try f.scheduler.submit(ProcessingTaskRequest(identifier: "other"))
            Issue.record("submitted an identifier that is not permitted")
        } catch TaskScheduler.Error.notPermitted {
        } catch {
            Issue.record("wrong error \(error)")
        }
    }

    @Test func limitsAndReplacement() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let first = AppRefreshTaskRequest(identifier: "refresh")
        try f.scheduler.submit(first)
        // Resubmitting the same identifier replaces it.
        let again = AppRefreshTaskRequest(identifier: "refresh")
        again.earliestBeginDate = f.clock.now.addingTimeInterval(600)
        try f.scheduler.submit(again)
        #expect(f.scheduler.pendingTaskRequests().count == 1)
        #expect(f.scheduler.pendingTaskRequests().first?.earliestBeginDate == again.earliestBeginDate)
        // A second refresh identifier is one too many.
        #expect { try f.scheduler.submit(AppRefreshTaskRequest(identifier: "refresh2")) } throws: { e in
            (e as? TaskScheduler.Error)?.code == .tooManyPendingTaskRequests
        }
        for i in 1...10 { try f.scheduler.submit(ProcessingTaskRequest(identifier: "p\(i)")) }
        #expect { try f.scheduler.submit(ProcessingTaskRequest(identifier: "p11")) } throws: { e in
            (e as? TaskScheduler.Error)?.code == .tooManyPendingTaskRequests
        }
        // Replacing one of the ten is not an eleventh.
        let replaced = ProcessingTaskRequest(identifier: "p3")
        replaced.requiresExternalPower = true
        try f.scheduler.submit(replaced)
        #expect(f.scheduler.pendingTaskRequests().count == 11)
        f.scheduler.cancel(taskRequestWithIdentifier: "p1")
        try f.scheduler.submit(ProcessingTaskRequest(identifier: "p11"))
        f.scheduler.cancelAllTaskRequests()
        #expect(f.scheduler.pendingTaskRequests().isEmpty)
    }

    @Test func pendingRequestsAreCopies() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let r = ProcessingTaskRequest(identifier: "p1")
        try f.scheduler.submit(r)
        r.requiresNetworkConnectivity = true
        let copy = try #require(f.scheduler.pendingTaskRequests().first as? ProcessingTaskRequest)
        #expect(copy.requiresNetworkConnectivity == false)
        copy.requiresExternalPower = true
        #expect((f.scheduler.pendingTaskRequests().first as? ProcessingTaskRequest)?.requiresExternalPower == false)
    }

    @Test func earliestBeginDateIsRespected() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let log = Log()
        f.scheduler.register(forTaskWithIdentifier: "refresh", using: nil) { task in
            log.add("ran")
            task.setTaskCompleted(success: true)
        }
        let r = AppRefreshTaskRequest(identifier: "refresh")
        r.earliestBeginDate = f.clock.now.addingTimeInterval(900)
        try f.scheduler.submit(r)
        #expect(f.scheduler.runDueTasks().isEmpty)
        f.clock.advance(by: 899)
        #expect(f.scheduler.runDueTasks().isEmpty)
        f.clock.advance(by: 1)
        #expect(f.scheduler.runDueTasks() == ["refresh"])
        #expect(eventually { f.scheduler.history(forTaskWithIdentifier: "refresh").count == 1 })
        #expect(log.all == ["ran"])
        #expect(f.scheduler.history(forTaskWithIdentifier: "refresh").first?.outcome == .success)
        #expect(f.scheduler.pendingTaskRequests().isEmpty)
    }

    @Test func conditionsHoldTasksBack() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        for id in ["p1", "p2", "refresh"] {
            f.scheduler.register(forTaskWithIdentifier: id, using: nil) { $0.setTaskCompleted(success: true) }
        }
        let net = ProcessingTaskRequest(identifier: "p1")
        net.requiresNetworkConnectivity = true
        let power = ProcessingTaskRequest(identifier: "p2")
        power.requiresExternalPower = true
        try f.scheduler.submit(net)
        try f.scheduler.submit(power)
        try f.scheduler.submit(AppRefreshTaskRequest(identifier: "refresh"))
        f.conditions.set(DeviceConditions(networkAvailable: false, onExternalPower: false))
        #expect(f.scheduler.runDueTasks().isEmpty)
        f.conditions.update { $0.onExternalPower = true }
        #expect(f.scheduler.runDueTasks() == ["p2"])
        // A low battery stops everything while discharging.
        f.conditions.set(DeviceConditions(networkAvailable: true, onExternalPower: false, batteryLow: true))
        #expect(f.scheduler.runDueTasks().isEmpty)
        f.conditions.update { $0.batteryLow = false }
        #expect(Set(f.scheduler.runDueTasks()) == ["p1", "refresh"])
    }

    @Test func expirationCallsTheHandlerOnceThenKills() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let log = Log()
        f.scheduler.register(forTaskWithIdentifier: "refresh", using: nil) { task in
            task.expirationHandler = { log.add("expired") }
            log.add("started")  // and never completes
        }
        try f.scheduler.submit(AppRefreshTaskRequest(identifier: "refresh"))
        #expect(f.scheduler.runDueTasks() == ["refresh"])
        #expect(eventually { log.all == ["started"] })
        f.clock.advance(by: 29)
        f.scheduler.runDueTasks()
        #expect(log.all == ["started"])
        f.clock.advance(by: 1)  // the 30 s refresh budget
        f.scheduler.runDueTasks()
        #expect(eventually { log.all == ["started", "expired"] })
        f.clock.advance(by: 4)
        f.scheduler.runDueTasks()
        #expect(f.scheduler.runningTaskIdentifiers == ["refresh"])
        f.clock.advance(by: 1)  // the grace period
        f.scheduler.runDueTasks()
        #expect(f.scheduler.runningTaskIdentifiers.isEmpty)
        #expect(f.scheduler.history(forTaskWithIdentifier: "refresh").map(\.outcome) == [.killed])
        #expect(log.all == ["started", "expired"])
    }

    @Test func noExpirationHandlerMeansFailed() throws {
        let f = try Fixture { $0.processingBudget = 120 }
        defer { f.dir.remove() }
        f.scheduler.register(forTaskWithIdentifier: "p1", using: nil) { _ in }
        try f.scheduler.submit(ProcessingTaskRequest(identifier: "p1"))
        f.scheduler.runDueTasks()
        f.clock.advance(by: 119)
        f.scheduler.runDueTasks()
        #expect(f.scheduler.runningTaskIdentifiers == ["p1"])
        f.clock.advance(by: 1)
        f.scheduler.runDueTasks()
        #expect(f.scheduler.runningTaskIdentifiers.isEmpty)
        #expect(f.scheduler.history(forTaskWithIdentifier: "p1").map(\.outcome) == [.expired])
    }

    @Test func failuresHoldTheNextRunBack() throws {
        let f = try Fixture { $0.failureBackoff = 100 }
        defer { f.dir.remove() }
        let succeed = Mutex(false)
        f.scheduler.register(forTaskWithIdentifier: "refresh", using: nil) { task in
            task.setTaskCompleted(success: succeed.withLock { $0 })
        }
        func runOnce() -> Bool {
            let ran = f.scheduler.runDueTasks() == ["refresh"]
            if ran { _ = eventually { f.scheduler.runningTaskIdentifiers.isEmpty } }
            return ran
        }
        try f.scheduler.submit(AppRefreshTaskRequest(identifier: "refresh"))
        #expect(runOnce())
        try f.scheduler.submit(AppRefreshTaskRequest(identifier: "refresh"))
        #expect(!runOnce())  // held back 100 s after one failure
        f.clock.advance(by: 100)
        #expect(runOnce())  // second failure
        try f.scheduler.submit(AppRefreshTaskRequest(identifier: "refresh"))
        f.clock.advance(by: 199)
        #expect(!runOnce())  // 200 s after two
        f.clock.advance(by: 1)
        succeed.withLock { $0 = true }
        #expect(runOnce())
        try f.scheduler.submit(AppRefreshTaskRequest(identifier: "refresh"))
        #expect(runOnce())  // a success clears the back-off
        #expect(
            f.scheduler.history(forTaskWithIdentifier: "refresh").map(\.outcome) == [
                .failure, .failure, .success, .success,
            ])
    }

    @Test func pendingRequestsSurviveARestart() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let p = ProcessingTaskRequest(identifier: "p1")
        p.requiresNetworkConnectivity = true
        p.earliestBeginDate = Date(timeIntervalSince1970: 1_900_000_000)
        try f.scheduler.submit(p)
        try f.scheduler.submit(AppRefreshTaskRequest(identifier: "refresh"))
        let after = try f.restarted()
        let pending = after.pendingTaskRequests().sorted { $0.identifier < $1.identifier }
        #expect(pending.map(\.identifier) == ["p1", "refresh"])
        let restored = try #require(pending[0] as? ProcessingTaskRequest)
        #expect(restored.requiresNetworkConnectivity && !restored.requiresExternalPower)
        #expect(restored.earliestBeginDate == p.earliestBeginDate)
        #expect(pending[1] is AppRefreshTaskRequest)
        // The limits count what was persisted.
        #expect(throws: TaskScheduler.Error.self) { try after.submit(AppRefreshTaskRequest(identifier: "refresh2")) }
    }

    @Test func oneOfTwoSchedulersRunsATask() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let other = try f.restarted()
        let count = Mutex(0)
        for s in [f.scheduler, other] {
            s.register(forTaskWithIdentifier: "refresh", using: nil) { t in
                count.withLock { $0 += 1 }
                t.setTaskCompleted(success: true)
            }
        }
        try f.scheduler.submit(AppRefreshTaskRequest(identifier: "refresh"))
        let launched = Mutex<[String]>([])
        let both = [f.scheduler, other]
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            let ids = both[i].runDueTasks()
            launched.withLock { $0 += ids }
        }
        #expect(launched.withLock { $0 } == ["refresh"])
        #expect(eventually { count.withLock { $0 } == 1 })
    }

    @Test func simulateHooks() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let log = Log()
        f.scheduler.register(forTaskWithIdentifier: "p1", using: nil) { task in
            task.expirationHandler = {
                log.add("expired")
                task.setTaskCompleted(success: false)
            }
            log.add("launched")
        }
        #expect(!f.scheduler.simulateLaunch(forTaskWithIdentifier: "p1"))  // nothing pending
        let r = ProcessingTaskRequest(identifier: "p1")
        r.requiresExternalPower = true
        r.earliestBeginDate = f.clock.now.addingTimeInterval(86_400)
        try f.scheduler.submit(r)
        f.conditions.update { $0.onExternalPower = false }
        #expect(f.scheduler.simulateLaunch(forTaskWithIdentifier: "p1"))  // whatever the date and conditions
        #expect(eventually { log.all == ["launched"] })
        f.scheduler.simulateExpiration(forTaskWithIdentifier: "p1")
        #expect(eventually { f.scheduler.runningTaskIdentifiers.isEmpty })
        #expect(log.all == ["launched", "expired"])
        #expect(f.scheduler.history(forTaskWithIdentifier: "p1").map(\.outcome) == [.expired])
    }

    @Test func appClipsHaveNoBackgroundTasks() throws {
        let f = try Fixture { $0.isAppClip = true }
        defer { f.dir.remove() }
        #expect(!f.scheduler.register(forTaskWithIdentifier: "refresh", using: nil) { _ in })
        #expect { try f.scheduler.submit(AppRefreshTaskRequest(identifier: "refresh")) } throws: { e in
            (e as? TaskScheduler.Error)?.code == .unavailable
        }
    }

    @Test func registeringTwiceStopsTheProcess() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let s = try! TaskScheduler(configuration: .init(permittedIdentifiers: ["x"]))
            s.register(forTaskWithIdentifier: "x", using: nil) { _ in }
            s.register(forTaskWithIdentifier: "x", using: nil) { _ in }
        }
        let said = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(said.contains("a launch handler for x is already registered"), "\(said)")
    }

    @Test func registeringAfterTheLaunchFinishedIsRefused() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        #expect(
            f.scheduler.register(forTaskWithIdentifier: "refresh", using: nil) { $0.setTaskCompleted(success: true) })
        f.scheduler.start(every: 3600)  // the app has finished launching
        defer { f.scheduler.stop() }
        #expect(
            f.scheduler.register(forTaskWithIdentifier: "p1", using: nil) { $0.setTaskCompleted(success: true) }
                == false)
        // The refused handler is not there: a request for it is never launched.
        try f.scheduler.submit(ProcessingTaskRequest(identifier: "p1"))
        #expect(f.scheduler.simulateLaunch(forTaskWithIdentifier: "p1") == false)
        #expect(f.scheduler.isPending("p1"))
        // A background launch finishes the launch as well.
        let g = try Fixture()
        defer { g.dir.remove() }
        _ = g.scheduler.runBackgroundLaunch()
        #expect(g.scheduler.register(forTaskWithIdentifier: "refresh", using: nil) { _ in } == false)
    }

    @Test func theFirstLaunchIsKeptForGood() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let container = f.dir.path
        #expect(AppLaunchRecord.firstLaunch(containerPath: container) == nil)
        let first = f.clock.now
        f.scheduler.recordAppLaunch()
        f.clock.advance(by: 90 * 86_400)
        f.scheduler.recordAppLaunch()  // the 60-day history drops the first launch
        #expect(f.scheduler.appLaunches(inLast: 365).count == 1)
        #expect(AppLaunchRecord.firstLaunch(containerPath: container) == first)
    }

    @Test func appLaunchesAreCounted() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        f.scheduler.recordAppLaunch()
        f.clock.advance(by: 3 * 86_400)
        f.scheduler.recordAppLaunch()
        #expect(f.scheduler.appLaunches(inLast: 7).count == 2)
        #expect(f.scheduler.appLaunches(inLast: 1).count == 1)
    }
}

@Suite struct TaskSchedulerConfigurationTests {
    @Test func readsInfoPlistAndJSON() throws {
        let dir = try TemporaryDirectory("config")
        defer { dir.remove() }
        let plist = try dir.write(
            "Info.plist",
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict>
              <key>BGTaskSchedulerPermittedIdentifiers</key><array><string>com.example.refresh</string><string>com.example.clean</string></array>
              <key>BacklotRefreshTaskBudget</key><integer>10</integer>
            </dict></plist>
            """)
        let fromPlist = try TaskSchedulerConfiguration(
            settings: try ConfigurationFile.read(path: plist).dictionary ?? [:], source: plist)
        #expect(fromPlist.permittedIdentifiers == ["com.example.refresh", "com.example.clean"])
        #expect(fromPlist.refreshBudget == 10 && fromPlist.processingBudget == 300)
        let json = try dir.write(
            "config.json",
            "{ // comments are fine\n \"BGTaskSchedulerPermittedIdentifiers\": [\"a\"], \"BacklotProcessingTaskBudget\": 90.5 }"
        )
        let fromJSON = try TaskSchedulerConfiguration(
            settings: try ConfigurationFile.read(path: json).dictionary ?? [:], source: json)
        #expect(fromJSON.permittedIdentifiers == ["a"] && fromJSON.processingBudget == 90.5)
    }

    @Test(arguments: [
        (#"{"BGTaskSchedulerPermittedIdentifiers": "a"}"#, "BGTaskSchedulerPermittedIdentifiers"),
        (#"{"BGTaskSchedulerPermittedIdentifiers": ["a", 3]}"#, "BGTaskSchedulerPermittedIdentifiers[1]"),
        (#"{"BacklotRefreshTaskBudget": -1}"#, "BacklotRefreshTaskBudget"),
        (#"{"BacklotIsAppClip": "yes"}"#, "BacklotIsAppClip"),
    ])
    func badKeysAreNamed(json: String, key: String) throws {
        let dir = try TemporaryDirectory("config")
        defer { dir.remove() }
        let path = try dir.write("config.json", json)
        #expect {
            try TaskSchedulerConfiguration(
                settings: try ConfigurationFile.read(path: path).dictionary ?? [:], source: path)
        } throws: { e in
            guard let e = e as? BacklotError else { return false }
            return e.code == .invalidInput && e.message.contains("the key \(key) ") && e.context == path
        }
    }
}

@Suite struct LinuxDeviceConditionsTests {
    /// A fake /sys and /proc.
    func machine(
        route: Bool, operstate: String = "up", supplies: [(String, [String: String])] = []
    ) throws -> (TemporaryDirectory, LinuxDeviceConditions) {
        let dir = try TemporaryDirectory("sys")
        try dir.write("sys/class/net/lo/operstate", "unknown\n")
        try dir.write("sys/class/net/eth0/operstate", operstate + "\n")
        var table = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        table += "eth0\t0002A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n"
        if route { table += "eth0\t00000000\t0102A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n" }
        try dir.write("proc/net/route", table)
        try dir.write("proc/net/ipv6_route", "")
        try FileManager.default.createDirectory(
            atPath: dir.at("sys/class/power_supply"), withIntermediateDirectories: true)
        for (name, files) in supplies {
            for (k, v) in files { try dir.write("sys/class/power_supply/\(name)/\(k)", v + "\n") }
        }
        return (
            dir,
            LinuxDeviceConditions(sysRoot: dir.at("sys"), procRoot: dir.at("proc"), meteredFallback: false, nmcli: nil)
        )
    }

    @Test func aDesktopOnEthernet() throws {
        let (dir, source) = try machine(route: true)
        defer { dir.remove() }
        #expect(
            source.current()
                == DeviceConditions(
                    networkAvailable: true, networkMetered: false, onExternalPower: true, batteryLow: false))
    }

    @Test func noDefaultRouteOrInterfaceDownIsOffline() throws {
        let (a, s1) = try machine(route: false)
        defer { a.remove() }
        #expect(!s1.current().networkAvailable)
        let (b, s2) = try machine(route: true, operstate: "down")
        defer { b.remove() }
        #expect(!s2.current().networkAvailable)
    }

    @Test func aLaptopOnALowBattery() throws {
        let (dir, source) = try machine(
            route: true,
            supplies: [
                ("AC", ["type": "Mains", "online": "0"]),
                ("BAT0", ["type": "Battery", "status": "Discharging", "capacity": "12"]),
            ])
        defer { dir.remove() }
        let c = source.current()
        #expect(!c.onExternalPower && c.batteryLow)
        try dir.write("sys/class/power_supply/AC/online", "1\n")
        try dir.write("sys/class/power_supply/BAT0/status", "Charging\n")
        #expect(source.current().onExternalPower && !source.current().batteryLow)
    }

    @Test func meteredComesFromConfigurationWithoutNetworkManager() throws {
        let (dir, base) = try machine(route: true)
        defer { dir.remove() }
        var source = base
        source.meteredFallback = true
        #expect(source.current().networkMetered)
    }

    @Test func meteredComesFromNetworkManager() throws {
        let (dir, base) = try machine(route: true)
        defer { dir.remove() }
        let fake = try dir.writeExecutable(
            "nmcli", "#!/bin/sh\n[ \"$4\" = show ] && [ \"$5\" = eth0 ] && echo 'yes (guessed)'\n")
        var source = base
        source.nmcli = fake
        // A loaded machine (CI, other suites starting servers) may take more than the default 2 s.
        source.commandTimeout = .seconds(120)
        #expect(source.current().networkMetered)
    }
}

/// Durations on the monotonic clock, calendar facts on the wall clock: a clock the test controls
/// (``ManualClock/step(by:)`` moves the wall clock only, as an administrator or NTP does).
@Suite struct TaskSchedulerClockStepTests {
    @Test(arguments: [-3600.0, 7200.0])
    func aStepNeitherStretchesNorCutsATasksBudgetAndGrace(step: Double) throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let log = Log()
        f.scheduler.register(forTaskWithIdentifier: "refresh", using: nil) { task in
            task.expirationHandler = { log.add("expired") }
            log.add("started")
        }
        try f.scheduler.submit(AppRefreshTaskRequest(identifier: "refresh"))
        #expect(f.scheduler.runDueTasks() == ["refresh"])
        #expect(eventually { log.all == ["started"] })
        f.clock.step(by: step)
        f.clock.advance(by: 29)
        f.scheduler.runDueTasks()
        #expect(log.all == ["started"])  // two hours forward are not 30 s of budget
        f.clock.advance(by: 1)  // an hour back does not stretch the 30 s
        f.scheduler.runDueTasks()
        #expect(eventually { log.all == ["started", "expired"] })
        f.clock.step(by: -step)
        f.clock.advance(by: 5)  // the grace period, whatever the wall clock did
        f.scheduler.runDueTasks()
        #expect(f.scheduler.runningTaskIdentifiers.isEmpty)
        #expect(f.scheduler.history(forTaskWithIdentifier: "refresh").map(\.outcome) == [.killed])
    }

    @Test(arguments: [-3600.0, 7200.0])
    func aStepNeitherStretchesNorSkipsTheBackOff(step: Double) throws {
        let f = try Fixture { $0.failureBackoff = 100 }
        defer { f.dir.remove() }
        f.scheduler.register(forTaskWithIdentifier: "refresh", using: nil) { task in
            task.setTaskCompleted(success: false)
        }
        func runOnce() -> Bool {
            let ran = f.scheduler.runDueTasks() == ["refresh"]
            if ran { _ = eventually { f.scheduler.runningTaskIdentifiers.isEmpty } }
            return ran
        }
        try f.scheduler.submit(AppRefreshTaskRequest(identifier: "refresh"))
        #expect(runOnce())
        try f.scheduler.submit(AppRefreshTaskRequest(identifier: "refresh"))
        f.clock.step(by: step)
        #expect(!runOnce())  // two hours forward do not end the 100 s back-off
        f.clock.advance(by: 99)
        #expect(!runOnce())
        f.clock.advance(by: 1)
        #expect(runOnce())  // an hour back does not make it an hour longer
        // Another scheduler on the same database (the agent, the app) measures it the same way.
        try f.scheduler.submit(AppRefreshTaskRequest(identifier: "refresh"))
        f.clock.step(by: -step)
        f.clock.advance(by: 199)
        #expect(!(try f.restarted().isDue(f.scheduler.pendingTaskRequests()[0])))
        f.clock.advance(by: 1)
        #expect(try f.restarted().isDue(f.scheduler.pendingTaskRequests()[0]))
    }

    @Test func earliestBeginDateIsACalendarFact() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let r = AppRefreshTaskRequest(identifier: "refresh")
        r.earliestBeginDate = f.clock.now.addingTimeInterval(900)
        try f.scheduler.submit(r)
        #expect(f.scheduler.dueTaskRequests().isEmpty)
        f.clock.step(by: 900)  // the wall clock reached the date
        #expect(f.scheduler.dueTaskRequests().map(\.identifier) == ["refresh"])
    }

    @Test func aReadingMeasuresOnTheMonotonicClockWithinABoot() {
        let clock = ManualClock()
        let reading = ClockReading(clock)
        clock.step(by: -3600)
        clock.advance(by: 10)
        #expect(reading.elapsed(until: clock) == 10)
        // From another boot only the wall clock can say, and never less than nothing.
        let before = ClockReading(wall: clock.now.addingTimeInterval(60), uptime: 5, bootID: "another")
        #expect(before.elapsed(until: clock) == 0)
        let real = ClockReading(SystemClock())
        #expect(real.elapsed(until: SystemClock()) >= 0)
    }
}
