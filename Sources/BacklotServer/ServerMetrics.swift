import BacklotProtocol
import BacklotRepository
import Foundation
import Synchronization

/// Counters exposed at `GET /metrics` in the Prometheus text format (version 0.0.4).
///
/// Request counters and latency histograms are lock-free atomics over a fixed set of route
/// classes (``RouteClass``), statuses and buckets, since every request of every connection
/// thread updates them; uploads and processing (rare) are counted under a lock.
///
/// ```swift
/// let metrics = ServerMetrics()
/// metrics.recordRequest(route: "static", path: "/v1/keys/root.json", status: 200, bytes: 512, seconds: 0.001)
/// print(metrics.prometheusText())
/// ```
public final class ServerMetrics: Sendable {
    static let routes = ["static", "api", "metrics", "other"]
    static let statuses = [200, 201, 202, 206, 304, 400, 401, 403, 404, 405, 409, 412, 413, 415, 416, 499, 500, 503]
    /// Upper bounds (seconds) of the request latency histogram's buckets.
    static let latencyBuckets: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]
    /// Upper bounds (seconds) of the processing-time histogram's buckets.
    static let processingBuckets: [Double] = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800]
    /// The build's version, in `backlot_build_info`.
    public let version: String

    /// One atomic counter (an array cannot hold `Atomic` values directly).
    final class Counter: Sendable {
        let value = Atomic<UInt64>(0)
    }
    private let requests: [Counter]  // by route label and status (the original family)
    private let classRequests: [Counter]  // by class and status
    private let classBytes: [Counter]
    private let latency: [Counter]  // by class: one per bucket, then +Inf
    private let latencySum: [Counter]  // nanoseconds, by class
    private let errors: [Counter]  // 4xx and 5xx answers but the expected misses, by class
    private let expectedMisses: [Counter]  // the key-list 404 every check makes, by class
    private let bytesSent = Atomic<UInt64>(0)
    private let outcomes = Mutex<[String: UInt64]>([:])  // "uploads\u{0}completed", rare
    private let processing = Mutex<(buckets: [UInt64], sum: Double, count: UInt64)>(([], 0, 0))

    /// - Parameter version: the build's version (`backlot --version`).
    public init(version: String = "unknown") {
        self.version = version
        let statusSlots = Self.statuses.count + 1
        requests = (0..<(Self.routes.count * statusSlots)).map { _ in Counter() }
        classRequests = (0..<(RouteClass.allCases.count * statusSlots)).map { _ in Counter() }
        classBytes = RouteClass.allCases.map { _ in Counter() }
        latency = (0..<(RouteClass.allCases.count * (Self.latencyBuckets.count + 1))).map { _ in Counter() }
        latencySum = RouteClass.allCases.map { _ in Counter() }
        errors = RouteClass.allCases.map { _ in Counter() }
        expectedMisses = RouteClass.allCases.map { _ in Counter() }
        processing.withLock { $0.buckets = Array(repeating: 0, count: Self.processingBuckets.count + 1) }
    }

    private func statusSlot(_ status: Int) -> Int { Self.statuses.firstIndex(of: status) ?? Self.statuses.count }

    /// Counts one answered request: by route label and status, by class (``RouteClass``) and
    /// status, its body bytes, and its time in the latency histogram.
    public func recordRequest(route: String, path: String = "", status: Int, bytes: UInt64, seconds: Double = 0) {
        let r = Self.routes.firstIndex(of: route) ?? Self.routes.count - 1
        let s = statusSlot(status)
        requests[r * (Self.statuses.count + 1) + s].value.wrappingAdd(1, ordering: .relaxed)
        bytesSent.wrappingAdd(bytes, ordering: .relaxed)
        let c = RouteClass(route: route, path: path).rawValue
        classRequests[c * (Self.statuses.count + 1) + s].value.wrappingAdd(1, ordering: .relaxed)
        classBytes[c].value.wrappingAdd(bytes, ordering: .relaxed)
        let bucket = Self.latencyBuckets.firstIndex { seconds <= $0 } ?? Self.latencyBuckets.count
        latency[c * (Self.latencyBuckets.count + 1) + bucket].value.wrappingAdd(1, ordering: .relaxed)
        let nanos = seconds.isFinite && seconds > 0 ? UInt64(min(seconds, 1e9) * 1e9) : 0
        latencySum[c].value.wrappingAdd(nanos, ordering: .relaxed)
        if RouteClass.isExpectedMiss(route: route, path: path, status: status) {
            expectedMisses[c].value.wrappingAdd(1, ordering: .relaxed)
        } else if status >= 400 {
            errors[c].value.wrappingAdd(1, ordering: .relaxed)
        }
    }

    /// Counts an upload that ended (`completed`, `partial`, `interrupted`, `refused`).
    public func recordUpload(_ outcome: String) { outcomes.withLock { $0["uploads\u{0}\(outcome)", default: 0] += 1 } }

    /// Counts a processed version (`complete`, `failed`, `cancelled`).
    public func recordProcessing(_ outcome: String) {
        outcomes.withLock { $0["processing\u{0}\(outcome)", default: 0] += 1 }
    }

    /// Adds a processing's time to the histogram.
    public func recordProcessingTime(seconds: Double) {
        guard seconds.isFinite, seconds >= 0 else { return }
        let bucket = Self.processingBuckets.firstIndex { seconds <= $0 } ?? Self.processingBuckets.count
        processing.withLock {
            $0.buckets[bucket] += 1
            $0.sum += seconds
            $0.count += 1
        }
    }

    /// What the exposition reads from outside the counters at each scrape.
    public struct Gauges: Sendable {
        /// Requests being answered now.
        public var inFlight: Int = 0
        /// Heavy requests (transfers of archives and deltas, API calls) being answered now, and
        /// their bound (0: none); requests answered 503 because the bound was reached (``LoadShedding``).
        public var heavyInFlight = 0
        public var heavyLimit = 0
        public var shed: UInt64 = 0
        /// When the earliest published catalog expires (nil when none is published).
        public var earliestCatalogExpiry: Date? = nil
        /// When a catalog was last re-signed before it expired (nil when never).
        public var lastResign: Date? = nil
        /// Devices' reports per app and release (``DeviceReports/metrics(now:)``).
        public var releases: [(app: String, row: AdoptionReport.Row)] = []
        /// Each production pack's live version, candidate and candidate share (basis points).
        public var productionPacks: [(app: String, pack: String, live: Int?, candidate: Int?, basisPoints: Int)] = []
        public init(inFlight: Int = 0, earliestCatalogExpiry: Date? = nil, lastResign: Date? = nil) {
            self.inFlight = inFlight
            self.earliestCatalogExpiry = earliestCatalogExpiry
            self.lastResign = lastResign
        }
    }

    static func number(_ d: Double) -> String {
        if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
        return String(d)
    }

    static func escape(_ label: String) -> String {
        label.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    /// The exposition text: every family with its `# HELP` and `# TYPE` lines.
    public func prometheusText(_ gauges: Gauges = Gauges(), now: Date = Date()) -> String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        let statusLabels = Self.statuses.map(String.init) + ["other"]
        family("backlot_http_requests_total", "counter", "HTTP requests answered, by route and status.")
        for (r, route) in Self.routes.enumerated() {
            for (s, status) in statusLabels.enumerated() {
                let n = requests[r * (Self.statuses.count + 1) + s].value.load(ordering: .relaxed)
                if n > 0 { out += "backlot_http_requests_total{route=\"\(route)\",status=\"\(status)\"} \(n)\n" }
            }
        }
        family("backlot_http_response_bytes_total", "counter", "Response body bytes sent.")
        out += "backlot_http_response_bytes_total \(bytesSent.load(ordering: .relaxed))\n"
        family(
            "backlot_requests_by_class_total", "counter",
            "HTTP requests answered, by route class (catalog, keyList, pack, appleManifest, applePack, delta, api, dashboard, metrics, other) and status."
        )
        for c in RouteClass.allCases {
            for (s, status) in statusLabels.enumerated() {
                let n = classRequests[c.rawValue * (Self.statuses.count + 1) + s].value.load(ordering: .relaxed)
                if n > 0 { out += "backlot_requests_by_class_total{class=\"\(c.label)\",status=\"\(status)\"} \(n)\n" }
            }
        }
        family(
            "backlot_http_errors_total", "counter",
            "Answers of 4xx and 5xx, by route class, but for the misses every client makes by design (backlot_expected_misses_total): what an alert should watch."
        )
        for c in RouteClass.allCases {
            let n = errors[c.rawValue].value.load(ordering: .relaxed)
            out += "backlot_http_errors_total{class=\"\(c.label)\"} \(n)\n"
        }
        family(
            "backlot_expected_misses_total", "counter",
            "404s every client's check makes by design: a numbered key list that does not exist yet (no rotation since the one it holds)."
        )
        for c in RouteClass.allCases {
            out +=
                "backlot_expected_misses_total{class=\"\(c.label)\"} \(expectedMisses[c.rawValue].value.load(ordering: .relaxed))\n"
        }
        family("backlot_response_bytes_by_class_total", "counter", "Response body bytes sent, by route class.")
        for c in RouteClass.allCases {
            out +=
                "backlot_response_bytes_by_class_total{class=\"\(c.label)\"} \(classBytes[c.rawValue].value.load(ordering: .relaxed))\n"
        }
        family("backlot_request_duration_seconds", "histogram", "Time to answer a request, by route class.")
        for c in RouteClass.allCases {
            var cumulative: UInt64 = 0
            for (b, bound) in (Self.latencyBuckets.map(Self.number) + ["+Inf"]).enumerated() {
                cumulative &+= latency[c.rawValue * (Self.latencyBuckets.count + 1) + b].value.load(ordering: .relaxed)
                out += "backlot_request_duration_seconds_bucket{class=\"\(c.label)\",le=\"\(bound)\"} \(cumulative)\n"
            }
            let sum = Double(latencySum[c.rawValue].value.load(ordering: .relaxed)) / 1e9
            out += "backlot_request_duration_seconds_sum{class=\"\(c.label)\"} \(sum)\n"
            out += "backlot_request_duration_seconds_count{class=\"\(c.label)\"} \(cumulative)\n"
        }
        family("backlot_http_requests_in_flight", "gauge", "Requests being answered now.")
        out += "backlot_http_requests_in_flight \(gauges.inFlight)\n"
        family(
            "backlot_heavy_requests_in_flight", "gauge",
            "Heavy requests (archive and delta transfers, API calls) being answered now.")
        out += "backlot_heavy_requests_in_flight \(gauges.heavyInFlight)\n"
        family("backlot_heavy_requests_limit", "gauge", "The bound on heavy requests at once (0: none).")
        out += "backlot_heavy_requests_limit \(gauges.heavyLimit)\n"
        family(
            "backlot_requests_shed_total", "counter",
            "Heavy requests answered 503 with Retry-After because the bound was reached.")
        out += "backlot_requests_shed_total \(gauges.shed)\n"
        let counts = outcomes.withLock { $0 }
        for (name, help) in [("uploads", "Uploads, by outcome."), ("processing", "Processed versions, by outcome.")] {
            family("backlot_\(name)_total", "counter", help)
            for (key, n) in counts.sorted(by: { $0.key < $1.key }) where key.hasPrefix(name + "\u{0}") {
                out += "backlot_\(name)_total{outcome=\"\(Self.escape(String(key.dropFirst(name.count + 1))))\"} \(n)\n"
            }
        }
        family("backlot_processing_duration_seconds", "histogram", "Time to process an uploaded archive.")
        let p = processing.withLock { $0 }
        var cumulative: UInt64 = 0
        for (b, bound) in (Self.processingBuckets.map(Self.number) + ["+Inf"]).enumerated() {
            cumulative += p.buckets[b]
            out += "backlot_processing_duration_seconds_bucket{le=\"\(bound)\"} \(cumulative)\n"
        }
        out += "backlot_processing_duration_seconds_sum \(p.sum)\n"
        out += "backlot_processing_duration_seconds_count \(p.count)\n"
        family(
            "backlot_catalog_expiry_seconds", "gauge",
            "Seconds until the earliest published catalog expires (negative once expired; no sample when none is published)."
        )
        if let expiry = gauges.earliestCatalogExpiry {
            out += "backlot_catalog_expiry_seconds \(Self.number(expiry.timeIntervalSince(now).rounded(.down)))\n"
        }
        family(
            "backlot_last_resign_timestamp_seconds", "gauge",
            "When catalogs were last re-signed before expiring, in Unix seconds (no sample before the first).")
        if let last = gauges.lastResign {
            out += "backlot_last_resign_timestamp_seconds \(Self.number(last.timeIntervalSince1970.rounded(.down)))\n"
        }
        family(
            "backlot_adoption_devices", "gauge",
            "Devices that reported holding a release on the last whole UTC day (no sample below 10: docs/privacy.md)."
        )
        func labels(_ app: String, _ r: AdoptionReport.Row) -> String {
            "app=\"\(Self.escape(app))\",channel=\"\(r.channel.rawValue)\",pack=\"\(Self.escape(r.pack ?? ""))\",version=\"\(r.version ?? 0)\""
        }
        for (app, r) in gauges.releases {
            if let n = r.devices { out += "backlot_adoption_devices{\(labels(app, r))} \(n)\n" }
        }
        family(
            "backlot_device_installs_total", "counter",
            "Installs of a release devices reported, by outcome (started, finished, failed); a series appears once it reaches 10."
        )
        for (app, r) in gauges.releases {
            for (outcome, n) in [("started", r.started), ("finished", r.finished), ("failed", r.failed)] {
                if let n { out += "backlot_device_installs_total{\(labels(app, r)),outcome=\"\(outcome)\"} \(n)\n" }
            }
        }
        family(
            "backlot_release_role", "gauge",
            "1 for each production release by its role: live (every other device) or candidate (a staged rollout).")
        for p in gauges.productionPacks {
            let pack = "app=\"\(Self.escape(p.app))\",pack=\"\(Self.escape(p.pack))\""
            if let live = p.live { out += "backlot_release_role{\(pack),version=\"\(live)\",role=\"live\"} 1\n" }
            if let candidate = p.candidate {
                out += "backlot_release_role{\(pack),version=\"\(candidate)\",role=\"candidate\"} 1\n"
            }
        }
        family("backlot_rollout_percent", "gauge", "The share of devices offered a production candidate, in percent.")
        for p in gauges.productionPacks {
            guard let candidate = p.candidate else { continue }
            out +=
                "backlot_rollout_percent{app=\"\(Self.escape(p.app))\",pack=\"\(Self.escape(p.pack))\",version=\"\(candidate)\"} \(Self.number(Double(p.basisPoints) / 100))\n"
        }
        family("backlot_build_info", "gauge", "The server's build: always 1, with its version as a label.")
        out += "backlot_build_info{version=\"\(Self.escape(version))\"} 1\n"
        return out
    }
}
