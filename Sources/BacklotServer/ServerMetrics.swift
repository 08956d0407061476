import Foundation
import Synchronization

/// Counters exposed at `GET /metrics` in the Prometheus text format (version 0.0.4).
///
/// Request counters are lock-free atomics over a fixed set of routes and statuses, since every
/// request of every connection thread updates them.
public final class ServerMetrics: Sendable {
    static let routes = ["static", "api", "metrics", "other"]
    static let statuses = [200, 201, 202, 206, 304, 400, 401, 403, 404, 405, 409, 413, 416, 499, 500]
    /// One atomic counter (an array cannot hold `Atomic` values directly).
    final class Counter: Sendable {
        let value = Atomic<UInt64>(0)
    }
    private let requests: [Counter]
    private let bytesSent = Atomic<UInt64>(0)
    private let outcomes = Mutex<[String: UInt64]>([:])  // "uploads\u{0}completed", rare

    public init() {
        requests = (0..<(Self.routes.count * (Self.statuses.count + 1))).map { _ in Counter() }
    }

    private func slot(route: String, status: Int) -> Int {
        let r = Self.routes.firstIndex(of: route) ?? Self.routes.count - 1
        let s = Self.statuses.firstIndex(of: status) ?? Self.statuses.count
        return r * (Self.statuses.count + 1) + s
    }

    /// Counts one answered request.
    public func recordRequest(route: String, status: Int, bytes: UInt64) {
        requests[slot(route: route, status: status)].value.wrappingAdd(1, ordering: .relaxed)
        bytesSent.wrappingAdd(bytes, ordering: .relaxed)
    }

    /// Counts an upload that ended (`completed`, `partial`, `interrupted`, `refused`).
    public func recordUpload(_ outcome: String) { outcomes.withLock { $0["uploads\u{0}\(outcome)", default: 0] += 1 } }

    /// Counts a processed version (`complete`, `failed`).
    public func recordProcessing(_ outcome: String) {
        outcomes.withLock { $0["processing\u{0}\(outcome)", default: 0] += 1 }
    }

    /// The exposition text.
    public func prometheusText() -> String {
        var out =
            "# HELP backlot_http_requests_total HTTP requests answered, by route and status.\n# TYPE backlot_http_requests_total counter\n"
        for (r, route) in Self.routes.enumerated() {
            for (s, status) in (Self.statuses.map(String.init) + ["other"]).enumerated() {
                let n = requests[r * (Self.statuses.count + 1) + s].value.load(ordering: .relaxed)
                if n > 0 { out += "backlot_http_requests_total{route=\"\(route)\",status=\"\(status)\"} \(n)\n" }
            }
        }
        out +=
            "# HELP backlot_http_response_bytes_total Response body bytes sent.\n# TYPE backlot_http_response_bytes_total counter\n"
        out += "backlot_http_response_bytes_total \(bytesSent.load(ordering: .relaxed))\n"
        let counts = outcomes.withLock { $0 }
        for (family, help) in [("uploads", "Uploads, by outcome."), ("processing", "Processed versions, by outcome.")] {
            out += "# HELP backlot_\(family)_total \(help)\n# TYPE backlot_\(family)_total counter\n"
            for (key, n) in counts.sorted(by: { $0.key < $1.key }) where key.hasPrefix(family + "\u{0}") {
                out += "backlot_\(family)_total{outcome=\"\(key.dropFirst(family.count + 1))\"} \(n)\n"
            }
        }
        return out
    }
}
