import BacklotBasics
@_spi(Simulation) import BacklotClient
import BacklotFormat
import BacklotProtocol
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Thousands of devices from one process (`backlot fleet`, docs/fleet.md): each with its own
/// container (its own device ID, so its own rollout bucket, its own catalog version and report
/// state), checking the catalog on the agent's schedule (``CheckSchedule``: an interval with
/// jitter, `Backlot-Check-After` and `Retry-After` honoured, failures backed off) and installing
/// through the client's own code — every chunk downloaded and checked against its SHA-256 — while
/// the content devices hold is kept once on disk (``SharedContent``).
///
/// Memory is bounded by ``FleetConfiguration/concurrency`` (the devices at work at one moment
/// each open their container; the others are an entry in a queue) and by the samples kept (a
/// duration per check and per install).
///
/// ```swift
/// let report = try FleetSimulator(configuration: configuration).run { print($0) }
/// print(report.checksPerSecond, report.checkLatency.p99)
/// ```
public struct FleetSimulator: Sendable {
    public let configuration: FleetConfiguration

    /// Nice values an install runs below the fleet's checks (``ThreadPriority``): the lowest, so that 48 installs at work weigh less than one check (at nice 10 they weighed five times more).
    static let installNiceness: Int32 = 19

    /// The marker that says a folder is a fleet's, so that a later run may empty it.
    static let marker = ".backlot-fleet"

    /// - Throws: ``BacklotError/Code/usage`` for a configuration ``FleetConfiguration/check()`` refuses.
    public init(configuration: FleetConfiguration) throws {
        try configuration.check()
        self.configuration = configuration
        target = try AssetPackManager.Configuration.target(ofCatalogURL: configuration.catalogURL)
    }

    /// The app and channel the catalog URL names, read once.
    let target: (app: String, channel: Channel)

    /// Makes the devices, runs the fleet for ``FleetConfiguration/duration`` seconds, checks a
    /// sample of devices' files, and reports.
    /// - Parameter log: receives a line per phase and one every ``FleetConfiguration/sampleInterval`` seconds.
    /// - Throws: ``BacklotError/Code/invalidInput`` for a folder that is neither empty nor a fleet's;
    ///   what installing the starting release throws; ``BacklotError/Code/checkFailed`` when a
    ///   verified device holds a damaged file.
    public func run(log: @escaping @Sendable (String) -> Void = { _ in }) throws -> FleetReport {
        let clock = ContinuousClock()
        let prepareStart = clock.now
        let paths = try prepareFolder()
        let content = SharedContent(root: paths.store)
        var generator = SeededGenerator(seed: configuration.seed)

        if configuration.startInstalled {
            let template = try AssetPackManager(configuration: managerConfiguration(paths.template))
            let first = try template.synchronizeNow(packs: configuration.packs)
            if let failure = first.failure {
                throw BacklotError(
                    .io, "the starting release of \(failure.pack) could not be installed: \(failure.error)",
                    context: configuration.catalogURL.absoluteString)
            }
            for (_, held) in first.held { try content.share(releaseFolder: held.folder, release: held.release) }
            log("fleet: the starting release installed once (\(Self.describe(first.held)))")
        }
        let devices = configuration.devices
        let run = FleetRun(devices: devices)
        let templateContainer = configuration.startInstalled ? try ClientContainer(path: paths.template) : nil
        let made = Atomic<Int>(0)
        let makeFailure = Mutex<(any Error)?>(nil)
        DispatchQueue.concurrentPerform(iterations: min(devices, max(1, configuration.concurrency))) { worker in
            var device = worker
            while device < devices, makeFailure.withLock({ $0 == nil }) {
                do {
                    let path = paths.device(device)
                    if let templateContainer {
                        _ = try templateContainer.clone(to: path)
                    } else {
                        _ = try ClientContainer(path: path)
                    }
                } catch {
                    makeFailure.withLock { $0 = $0 ?? error }
                }
                made.wrappingAdd(1, ordering: .relaxed)
                device += max(1, configuration.concurrency)
            }
        }
        if let error = makeFailure.withLock({ $0 }) { throw error }
        if let templateContainer {
            let holding = try templateContainer.installed().map { "\($0.id)@\($0.version)" }.sorted().joined(
                separator: ",")
            run.state.withLock { s in for d in 0..<devices { s.holding[d] = holding.isEmpty ? "none" : holding } }
        }
        let prepareSeconds = (clock.now - prepareStart).inSeconds
        log(
            "fleet: \(devices) devices made in \(String(format: "%.1f", prepareSeconds)) s; running \(Int(configuration.duration)) s"
        )

        // The first checks are spread over one interval, as a fleet in its steady state.
        run.queue.withLock { q in
            for d in 0..<devices {
                q.push(d, due: Double.random(in: 0..<configuration.checkInterval, using: &generator))
            }
        }
        run.begin()
        let elapsed = run.elapsed
        let stopSampling = Atomic<Bool>(false)
        let samplerEnded = DispatchSemaphore(value: 0)
        let sampler = Thread {
            defer { samplerEnded.signal() }
            var next = configuration.sampleInterval
            while !stopSampling.load(ordering: .relaxed) {
                if elapsed() >= next {
                    let sample = run.state.withLock { s in
                        let sample = s.sample(at: elapsed())
                        s.adoption.append(sample)
                        return sample
                    }
                    log("fleet: \(String(format: "%.0f", sample.seconds)) s: \(Self.describe(sample.holding))")
                    if let goal = configuration.stopWhenAllHold,
                        Self.devices(holding: goal, in: sample) == configuration.devices
                    {
                        log("fleet: every device holds \(goal): stopping")
                        run.finish()
                    } else if let done = configuration.stopWhen, done(sample.holding) {
                        log("fleet: the holding asked for is reached: stopping")
                        run.finish()
                    }
                    next += configuration.sampleInterval
                }
                usleep(50_000)
            }
        }
        sampler.start()
        let workers = DispatchGroup()
        for worker in 0..<configuration.concurrency {
            workers.enter()
            let thread = Thread {
                defer { workers.leave() }
                var random = SeededGenerator(seed: configuration.seed &+ UInt64(worker) &+ 1)
                runWorker(run, content: content, paths: paths, random: &random)
            }
            thread.start()
        }
        workers.wait()
        stopSampling.store(true, ordering: .relaxed)
        samplerEnded.wait()  // no sample after the last one below, no line logged after the run
        let runSeconds = elapsed()
        run.state.withLock { s in s.adoption.append(s.sample(at: runSeconds)) }

        // Wrong bytes fail the run: a sample of devices' files checked against their SHA-256.
        var damaged: [String] = []
        let verified = min(devices, max(0, configuration.verifiedDevices))
        var picked = Set<Int>()
        while picked.count < verified { picked.insert(Int.random(in: 0..<devices, using: &generator)) }
        for d in picked.sorted() {
            damaged += try ClientContainer.verify(path: paths.device(d)).map { "device \(d): \($0)" }
        }
        let report = run.state.withLock { s in
            s.report(
                configuration: configuration, prepareSeconds: prepareSeconds, runSeconds: runSeconds,
                verified: verified, damaged: damaged)
        }
        guard damaged.isEmpty else {
            throw BacklotError(
                .checkFailed,
                "\(damaged.count) installed files do not match their SHA-256: \(damaged.prefix(5).joined(separator: "; "))",
                context: paths.root)
        }
        return report
    }

    /// One of the fleet's threads: takes the earliest due device, runs its check, schedules its
    /// next one; ends when the next due device would start after the run's end.
    private func runWorker(_ run: FleetRun, content: SharedContent, paths: FleetPaths, random: inout SeededGenerator) {

        let elapsed = run.elapsed
        let schedule = CheckSchedule(
            interval: configuration.checkInterval, jitter: configuration.jitter, firstRetry: configuration.firstRetry,
            longestRetry: configuration.checkInterval)
        while true {
            let now = elapsed()
            guard now < configuration.duration, !run.isFinished else { return }
            let taken = run.queue.withLock { q -> (due: Double, device: Int)? in
                guard let due = q.earliest, due <= now else { return nil }
                return q.pop()
            }
            guard let (due, device) = taken else {
                usleep(10_000)
                continue
            }
            let lag = max(0, elapsed() - due)
            run.state.withLock { $0.startLagSeconds.add(lag) }
            let outcome = check(device: device, paths: paths, content: content)
            let delay: Double
            switch outcome {
            case .checked(let result):
                let attempt = run.state.withLock { s in
                    s.record(device: device, result)
                    return s.failuresInRow[device]
                }
                // A failed install is retried as a failed check is: backed off, not a whole interval later.
                delay =
                    attempt == 0
                    ? schedule.delay(after: .checked(checkAfter: result.checkAfter), using: &random)
                    : schedule.delay(after: .failed(attempt: attempt, retryAfter: nil), using: &random)
            case .failed(let failure):
                let attempt = run.state.withLock { s in
                    s.recordFailedCheck(device: device, failure)
                    return s.failuresInRow[device]
                }
                delay = schedule.delay(
                    after: .failed(attempt: attempt, retryAfter: (failure as? BacklotError)?.retryAfter), using: &random
                )
            }
            run.queue.withLock { $0.push(device, due: elapsed() + delay) }
        }
    }

    enum CheckOutcome {
        case checked(AssetPackManager.SimulatedCheck)
        case failed(any Error)
    }

    /// One device's check: its container opened, the catalog checked, what changed installed, the
    /// new files shared.
    private func check(device: Int, paths: FleetPaths, content: SharedContent) -> CheckOutcome {
        do {
            let manager = try AssetPackManager(configuration: managerConfiguration(paths.device(device)))
            let offer = try manager.checkNow(packs: configuration.packs)
            // A device's install runs below the checks' priority: on its own hardware it would never
            // hold another device's check back, here they share the fleet's cores.
            let result =
                offer.installs
                ? try ThreadPriority.runLowered(by: Self.installNiceness) { try manager.installNow(offer) }
                : try manager.installNow(offer)
            for (report, _) in result.installs {
                if let held = result.held[report.id] {
                    try content.share(releaseFolder: held.folder, release: held.release)
                }
            }
            return .checked(result)
        } catch {
            return .failed(error)
        }
    }

    func managerConfiguration(_ container: String) -> AssetPackManager.Configuration {
        var c = AssetPackManager.Configuration(
            containerPath: container, catalogURL: configuration.catalogURL, app: target.app, channel: target.channel,
            trustedKeys: configuration.trustedKeys, platform: .linux, caFile: configuration.caFile)
        c.sendsReports = configuration.sendsReports
        c.deviceProfile = DeviceProfile(textureFormats: [], deviceTier: 0)
        c.stallTimeout = 30
        return c
    }

    /// The run's folder: emptied when it is a fleet's, refused when it holds anything else.
    private func prepareFolder() throws -> FleetPaths {
        let root = URL(fileURLWithPath: configuration.folder).standardizedFileURL.path
        let paths = FleetPaths(root: root)
        if FileSystem.exists(root) {
            let names = try FileSystem.entryNames(root).map { String(decoding: $0, as: UTF8.self) }
            guard names.isEmpty || names.contains(Self.marker) else {
                throw BacklotError(
                    .invalidInput, "\(configuration.folder) is neither empty nor a fleet's folder",
                    hint: "give --folder an empty or new folder (a fleet's own is emptied at each run)")
            }
            for name in names where name != Self.marker { FileSystem.removeTree(root + "/" + name) }
        }
        try FileSystem.makeDirectories(paths.devices)
        try FileSystem.makeDirectories(paths.store)
        guard FileManager.default.createFile(atPath: root + "/" + Self.marker, contents: Data("backlot fleet\n".utf8))
        else {
            throw BacklotError(.io, "cannot write \(Self.marker)", context: root)
        }
        return paths
    }

    static func describe(_ held: [String: (version: Int, release: String, folder: String)]) -> String {
        held.isEmpty
            ? "nothing"
            : held.sorted { $0.key < $1.key }.map { "\($0.key)@\($0.value.version)" }.joined(separator: ", ")
    }

    /// Devices of `sample` that hold `release` ("PACK@VERSION"), whatever else they hold.
    static func devices(holding release: String, in sample: FleetReport.Sample) -> Int {
        sample.holding.reduce(0) { sum, entry in
            entry.key.split(separator: ",").contains { $0 == release } ? sum + entry.value : sum
        }
    }

    static func describe(_ holding: [String: Int]) -> String {
        holding.sorted { $0.key < $1.key }.map { "\($0.value) on \($0.key)" }.joined(separator: ", ")
    }
}

/// One run's shared state: the queue of due devices and what was counted, each behind its lock,
/// and the monotonic clock the run's seconds are read on.
final class FleetRun: Sendable {
    let queue = Mutex(DueQueue())
    let state: Mutex<FleetState>
    private let start = Mutex(ContinuousClock.now)
    private let finished = Atomic<Bool>(false)

    init(devices: Int) { state = Mutex(FleetState(devices: devices)) }

    /// Starts the run's clock.
    func begin() { start.withLock { $0 = .now } }

    /// Ends the run early: no check starts after it.
    func finish() { finished.store(true, ordering: .relaxed) }
    var isFinished: Bool { finished.load(ordering: .relaxed) }

    /// Seconds since ``begin()``.
    @Sendable func elapsed() -> Double { (ContinuousClock.now - start.withLock { $0 }).inSeconds }
}

/// Where a fleet's devices, template and shared content are.
struct FleetPaths: Sendable {
    let root: String
    var devices: String { root + "/devices" }
    var store: String { root + "/content" }
    var template: String { root + "/template" }
    func device(_ n: Int) -> String { devices + "/" + String(format: "%06d", n) }
}
