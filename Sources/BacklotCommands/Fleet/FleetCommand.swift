import BacklotBasics
import BacklotFleet
import BacklotProtocol
import Foundation

/// `backlot fleet`: thousands of simulated devices checking and installing from one catalog.
struct FleetCommand: Command {
    static let spec = CommandSpec(
        name: "fleet",
        summary:
            "Simulate a fleet of devices (default 1,000) checking a catalog on loopback and installing what it offers, through the client's own code; report rates, latencies, failures and adoption.",
        discussion:
            "Each device has its own container (device ID, rollout bucket, reports); checks follow the agent's schedule (an interval with jitter, Backlot-Check-After and Retry-After honoured, failures backed off); every chunk is downloaded and checked, while the content devices hold is kept once on disk under --folder. Only a catalog on this machine is accepted. docs/fleet.md.",
        options: [
            FetchCommand.catalog, FetchCommand.trust, FetchCommand.ca, folder, devices, duration, rate, checkInterval,
            jitter, concurrency, packs, startEmpty, noReport, verify, sampleInterval, until, seed, jsonFlag,
        ])

    static let folder = Option<String>(
        "folder", "DIR",
        help:
            "Where the devices' containers and their shared content are made (empty, new, or a fleet's earlier folder)."
    )
    static let devices = Option<Int>(
        "devices", "N", default: 1_000, in: 1...FleetConfiguration.mostDevices, help: "How many devices.")
    static let duration = Option<Int>(
        "duration", "SECONDS", default: 60, in: 1...86_400,
        help: "How long the fleet runs (checks in flight then end by themselves).")
    static let rate = Option<Double?>(
        "rate", "CHECKS",
        help: "Checks per second the fleet makes in its steady state (sets --check-interval to N / CHECKS).",
        expected: "a positive number", check: { ($0 ?? 1) > 0 })
    static let checkInterval = Option<Int>(
        "check-interval", "SECONDS", default: 60, in: 1...86_400,
        help: "Seconds between a device's checks (the agent's periodic interval, shortened to fit a run).")
    static let jitter = Option<Double>(
        "jitter", "SHARE", default: 0.2, help: "The spread of each device's checks: 0.2 is ±20 %.",
        expected: "a number from 0 to 0.9", check: { $0 >= 0 && $0 <= 0.9 })
    static let concurrency = Option<Int>(
        "concurrency", "N", default: 32, in: 1...1024,
        help: "Devices at work at the same moment, at most (a thread each).")
    static let packs = Option<[String]>(
        "pack", "ID", help: "Only these packs (default: every pack the catalog offers).")
    static let startEmpty = Flag(
        "start-empty",
        help:
            "Devices start holding nothing, so each downloads the current release whole (default: they hold it, installed once and shared)."
    )
    static let noReport = Flag("no-report", help: "Devices send no reports to the server.")
    static let verify = Option<Int>(
        "verify", "N", default: 8, in: 0...FleetConfiguration.mostDevices,
        help: "Devices whose files are checked against their SHA-256 at the end (a damaged file fails the run).")
    static let sampleInterval = Option<Int>(
        "sample-interval", "SECONDS", default: 5, in: 1...3_600,
        help: "Seconds between two samples of the adoption curve.")
    static let until = Option<String?>(
        "until", "PACK@VERSION",
        help:
            "End the run early once every device holds this release (checked at each sample; --duration still bounds it).",
        expected: "PACK@VERSION", check: { $0.map { $0.split(separator: "@").count == 2 } ?? true })
    static let seed = Option<UInt64?>(
        "seed", "N", help: "The seed of the run's random choices (printed in the report).")

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let text = arguments[FetchCommand.catalog]
        guard let url = URL(string: text), url.scheme == "https" || url.scheme == "http" else {
            throw BacklotError(.usage, "--catalog must be an http(s) URL", context: text)
        }
        var configuration = FleetConfiguration(
            catalogURL: url, trustedKeys: [try PublicKeyFile.read(path: arguments[FetchCommand.trust])],
            folder: arguments[folder])
        configuration.caFile = arguments[FetchCommand.ca]
        configuration.devices = arguments[devices]
        configuration.duration = TimeInterval(arguments[duration])
        configuration.checkInterval = TimeInterval(arguments[checkInterval])
        if let rate = arguments[rate] { configuration.checkInterval = max(1, Double(configuration.devices) / rate) }
        configuration.jitter = arguments[jitter]
        configuration.concurrency = arguments[concurrency]
        configuration.packs = arguments[packs].isEmpty ? nil : Set(arguments[packs])
        configuration.startInstalled = !arguments[startEmpty]
        configuration.sendsReports = !arguments[noReport]
        configuration.verifiedDevices = arguments[verify]
        configuration.sampleInterval = TimeInterval(arguments[sampleInterval])
        if let seed = arguments[seed] { configuration.seed = seed }
        configuration.stopWhenAllHold = arguments[until]
        let json = arguments[jsonFlag]
        io.err("fleet: seed \(configuration.seed)\n")
        let report = try FleetSimulator(configuration: configuration).run { line in io.err(line + "\n") }
        if json {
            try io.outJSON(report)
            return
        }
        let l = report.checkLatency
        let i = report.installLatency
        io.out(
            """
            devices \(report.devices), \(String(format: "%.1f", report.runSeconds)) s (made in \(String(format: "%.1f", report.prepareSeconds)) s), seed \(report.seed)
            checks \(report.checks) (\(String(format: "%.1f", report.checksPerSecond))/s), failed \(report.failedChecks); latency ms p50 \(fmt(l.p50)) p95 \(fmt(l.p95)) p99 \(fmt(l.p99)) max \(fmt(l.max))
            installs \(report.installs) (\(String(format: "%.2f", report.installsPerSecond))/s), failed \(report.failedInstalls); latency ms p50 \(fmt(i.p50)) p95 \(fmt(i.p95)) p99 \(fmt(i.p99)) max \(fmt(i.max))
            checks started late (every device at work busy) ms p50 \(fmt(report.checkStartLag.p50)) p99 \(fmt(report.checkStartLag.p99)) max \(fmt(report.checkStartLag.max))
            downloaded \(ByteCount.format(report.downloadedBytes)); Retry-After honoured \(report.retryAfterHonoured); Backlot-Check-After seen \(report.checkAfterHints)
            holding: \(report.holding.sorted { $0.key < $1.key }.map { "\($0.value) on \($0.key)" }.joined(separator: ", "))
            verified \(report.verifiedDevices) devices: \(report.damagedFiles.isEmpty ? "no damaged file" : "\(report.damagedFiles.count) damaged files")\n

            """)
        for (reason, count) in report.failures.sorted(by: { $0.key < $1.key }) {
            io.out("failure \(reason): \(count); the first: \(report.failureExamples[reason] ?? "?")\n")
        }
    }

    private static func fmt(_ ms: Double) -> String { String(format: "%.1f", ms) }
}
