/// What a fleet run measured (`backlot fleet --json`, docs/json.md and docs/fleet.md).
public struct FleetReport: Codable, Sendable, Hashable {
    /// Percentiles of a set of durations, in milliseconds.
    public struct Latency: Codable, Sendable, Hashable {
        public var count: Int
        public var p50: Double
        public var p95: Double
        public var p99: Double
        public var max: Double
    }

    /// Which release of each pack devices held at one moment.
    public struct Sample: Codable, Sendable, Hashable {
        /// Seconds since the fleet started checking.
        public var seconds: Double
        /// Devices by "PACK@VERSION" they hold ("none" for a device holding nothing).
        public var holding: [String: Int]
    }

    public var devices: Int
    public var seed: UInt64
    /// Seconds spent making the devices (and installing the starting release once) before the run.
    public var prepareSeconds: Double
    /// Seconds from the first check started to the last one ended.
    public var runSeconds: Double
    public var checks: Int
    public var checksPerSecond: Double
    /// Checks that failed (the catalog could not be read or trusted, or an install failed).
    public var failedChecks: Int
    public var installs: Int
    public var installsPerSecond: Double
    /// Installs that failed; each is retried at the device's next check.
    public var failedInstalls: Int
    /// Failures by reason (the error's code, and the HTTP status where there was one).
    public var failures: [String: Int]
    /// For each reason of ``failures``, the first such error's whole text (what failed, where, and
    /// the transfer's own words), so that a failure seen once can be told from another.
    public var failureExamples: [String: String]
    /// Bytes the installs downloaded from the server (delta frames included).
    public var downloadedBytes: UInt64
    /// The catalog checks' durations (request, key-list check, signature).
    public var checkLatency: Latency
    /// The installs' durations.
    public var installLatency: Latency
    /// How late checks started after they were due: the fleet's own lag, when all its
    /// ``FleetConfiguration/concurrency`` devices at work were busy (installing, mostly). Real
    /// devices have no such wait; a large lag means the run simulated fewer checks than asked.
    public var checkStartLag: Latency
    /// Checks the server answered 503 or 429 with a `Retry-After` that the device then waited out.
    public var retryAfterHonoured: Int
    /// Checks whose answer carried a `Backlot-Check-After` hint.
    public var checkAfterHints: Int
    /// The adoption curve: what devices held, every `sampleInterval` seconds and at the end.
    public var adoption: [Sample]
    /// What devices held at the end.
    public var holding: [String: Int]
    /// Devices whose installed files were all checked against their SHA-256 at the end, and the
    /// damaged files found (none, or the run fails).
    public var verifiedDevices: Int
    public var damagedFiles: [String]
    /// The process's peak resident memory, in bytes.
    public var peakResidentBytes: UInt64
}

extension FleetReport.Latency {
    /// The percentiles of `seconds` (nearest rank), in milliseconds.
    init(seconds: [Double]) {
        let sorted = seconds.sorted()
        func rank(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            let index = Int((p * Double(sorted.count)).rounded(.up)) - 1
            return sorted[min(sorted.count - 1, Swift.max(0, index))] * 1000
        }
        self.init(count: sorted.count, p50: rank(0.5), p95: rank(0.95), p99: rank(0.99), max: rank(1))
    }
}
