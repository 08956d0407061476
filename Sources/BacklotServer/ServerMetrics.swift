import Foundation
import Synchronization

/// Counters exposed at `GET /metrics` in the Prometheus text format (version 0.0.4).
public final class ServerMetrics: Sendable {
    private struct State {
        var requests: [String: UInt64] = [:]     // "route\u{0}status"
        var bytesSent: UInt64 = 0
        var uploads: [String: UInt64] = [:]      // outcome
        var processing: [String: UInt64] = [:]   // outcome
    }
    private let state = Mutex(State())

    public init() {}

    /// Counts one answered request.
    public func recordRequest(route: String, status: Int, bytes: UInt64) {
        state.withLock { s in
            s.requests["\(route)\u{0}\(status)", default: 0] += 1
            s.bytesSent += bytes
        }
    }

    /// Counts an upload that ended (`completed`, `interrupted`, `refused`).
    public func recordUpload(_ outcome: String) { state.withLock { $0.uploads[outcome, default: 0] += 1 } }

    /// Counts a processed version (`complete`, `failed`).
    public func recordProcessing(_ outcome: String) { state.withLock { $0.processing[outcome, default: 0] += 1 } }

    /// The exposition text.
    public func prometheusText() -> String {
        let s = state.withLock { $0 }
        var out = "# HELP backlot_http_requests_total HTTP requests answered, by route and status.\n# TYPE backlot_http_requests_total counter\n"
        for (key, n) in s.requests.sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: "\u{0}", omittingEmptySubsequences: false)
            out += "backlot_http_requests_total{route=\"\(parts[0])\",status=\"\(parts[1])\"} \(n)\n"
        }
        out += "# HELP backlot_http_response_bytes_total Response body bytes sent.\n# TYPE backlot_http_response_bytes_total counter\n"
        out += "backlot_http_response_bytes_total \(s.bytesSent)\n"
        out += "# HELP backlot_uploads_total Uploads, by outcome.\n# TYPE backlot_uploads_total counter\n"
        for (k, n) in s.uploads.sorted(by: { $0.key < $1.key }) { out += "backlot_uploads_total{outcome=\"\(k)\"} \(n)\n" }
        out += "# HELP backlot_processing_total Processed versions, by outcome.\n# TYPE backlot_processing_total counter\n"
        for (k, n) in s.processing.sorted(by: { $0.key < $1.key }) { out += "backlot_processing_total{outcome=\"\(k)\"} \(n)\n" }
        return out
    }
}
