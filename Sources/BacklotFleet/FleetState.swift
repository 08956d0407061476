import BacklotBasics
@_spi(Simulation) import BacklotClient
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What a fleet run has counted so far, under the simulator's lock: per device what it holds and
/// how many checks in a row failed, and the run's totals and durations.
struct FleetState {
    /// What each device holds, as "PACK@VERSION,…" ("none" for nothing).
    var holding: [String]
    /// Failed checks in a row, per device (the back-off's attempt number).
    var failuresInRow: [Int]
    var checks = 0
    var failedChecks = 0
    var installs = 0
    var failedInstalls = 0
    var failures: [String: Int] = [:]
    var failureExamples: [String: String] = [:]
    var downloadedBytes: UInt64 = 0
    var checkSeconds = Reservoir()
    var installSeconds = Reservoir()
    var startLagSeconds = Reservoir()
    var retryAfterHonoured = 0
    var checkAfterHints = 0
    var adoption: [FleetReport.Sample] = []

    /// The durations of one kind: all of them up to ``capacity``, then a uniform sample of that
    /// many (reservoir sampling: the n-th replaces a random kept one with probability capacity/n),
    /// so memory stays bounded and the percentiles stay those of the whole run.
    struct Reservoir {
        static let capacity = 2_000_000
        private(set) var kept: [Double] = []
        private(set) var seen = 0

        mutating func add(_ value: Double) {
            seen += 1
            if kept.count < Self.capacity {
                kept.append(value)
            } else {
                let slot = Int.random(in: 0..<seen)
                if slot < Self.capacity { kept[slot] = value }
            }
        }
    }

    init(devices: Int) {
        holding = Array(repeating: "none", count: devices)
        failuresInRow = Array(repeating: 0, count: devices)
    }

    mutating func record(device: Int, _ result: AssetPackManager.SimulatedCheck) {
        checks += 1
        checkSeconds.add(result.checkSeconds)
        if result.checkAfter != nil { checkAfterHints += 1 }
        for (report, seconds) in result.installs {
            installs += 1
            downloadedBytes += report.downloadedBytes
            installSeconds.add(seconds)
        }
        if let failure = result.failure {
            failedInstalls += 1
            count("install: " + Self.reason(failure.error), failure.error)
            failuresInRow[device] += 1
        } else {
            failuresInRow[device] = 0
        }
        let held = result.held.sorted { $0.key < $1.key }.map { "\($0.key)@\($0.value.version)" }
        holding[device] = held.isEmpty ? "none" : held.joined(separator: ",")
    }

    mutating func recordFailedCheck(device: Int, _ error: any Error) {
        checks += 1
        failedChecks += 1
        count("check: " + Self.reason(error), error)
        failuresInRow[device] += 1
        if (error as? BacklotError)?.retryAfter != nil { retryAfterHonoured += 1 }
    }

    /// Counts a failure under `reason`, keeping the first one's text.
    private mutating func count(_ reason: String, _ error: any Error) {
        failures[reason, default: 0] += 1
        if failureExamples[reason] == nil { failureExamples[reason] = String(describing: error) }
    }

    /// A failure's reason, as the report counts it: the error's code and, for an HTTP answer, its status.
    static func reason(_ error: any Error) -> String {
        guard let e = error as? BacklotError else { return String(describing: type(of: error)) }
        if let status = e.message.firstMatch(of: /answered (\d{3})/)?.1 { return "\(e.code.name) (HTTP \(status))" }
        return e.code.name
    }

    func sample(at seconds: Double) -> FleetReport.Sample {
        var counts: [String: Int] = [:]
        for h in holding { counts[h, default: 0] += 1 }
        return FleetReport.Sample(seconds: (seconds * 10).rounded() / 10, holding: counts)
    }

    func report(
        configuration: FleetConfiguration, prepareSeconds: Double, runSeconds: Double, verified: Int, damaged: [String]
    ) -> FleetReport {
        let run = max(runSeconds, 0.001)
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return FleetReport(
            devices: configuration.devices, seed: configuration.seed, prepareSeconds: prepareSeconds,
            runSeconds: runSeconds, checks: checks, checksPerSecond: Double(checks) / run, failedChecks: failedChecks,
            installs: installs, installsPerSecond: Double(installs) / run, failedInstalls: failedInstalls,
            failures: failures, failureExamples: failureExamples, downloadedBytes: downloadedBytes,
            checkLatency: .init(seconds: checkSeconds.kept), installLatency: .init(seconds: installSeconds.kept),
            checkStartLag: .init(seconds: startLagSeconds.kept),
            retryAfterHonoured: retryAfterHonoured, checkAfterHints: checkAfterHints, adoption: adoption,
            holding: sample(at: runSeconds).holding, verifiedDevices: verified, damagedFiles: damaged,
            peakResidentBytes: UInt64(max(0, usage.ru_maxrss)) * 1024)
    }
}
