import BacklotBasics
import BacklotHTTPClient
import Foundation

/// `backlot serve` under a `Type=notify` systemd unit (contrib/systemd/backlot-serve.service):
/// `READY=1` once the server answers, `STATUS=` lines, `STOPPING=1`, and under `WatchdogSec=`
/// a `WATCHDOG=1` every half interval, sent only after the server answered a request of its own
/// (`GET /metrics` on its listening address): a server whose request threads are stuck stops
/// feeding the watchdog and systemd restarts it. Without `NOTIFY_SOCKET` it does nothing.
final class ServeNotifier: Sendable {
    let manager: ServiceManager
    let probeURL: String
    let client: HTTPClient
    let log: @Sendable (String) -> Void
    private let timer: RepeatingTimer?

    /// nil when no service manager listens (`NOTIFY_SOCKET` unset).
    /// - Parameters:
    ///   - baseURL: the server's own URL (`https://127.0.0.1:8443/`).
    ///   - caFile: the CA its certificate is checked against (a TLS answer of any kind still
    ///     proves the server alive: the probe is about liveness, not trust).
    init?(environment: [String: String], baseURL: String, caFile: String?, log: @escaping @Sendable (String) -> Void) {
        guard let manager = ServiceManager(environment: environment) else { return nil }
        self.manager = manager
        probeURL = baseURL + "metrics"
        self.log = log
        let interval = manager.watchdogInterval
        // The probe must end well within the watchdog's interval.
        let budget = max(1, Int((interval ?? 10) / 4))
        client = HTTPClient(caFile: caFile, stallTimeout: budget, maximumBodySize: 1 << 20, baseDeadline: budget)
        guard let interval else {
            timer = nil
            return
        }
        let probe = (url: probeURL, client: client)
        timer = RepeatingTimer(label: "backlot.watchdog", every: interval / 2) {
            if let problem = ServeNotifier.liveness(probe.url, probe.client) {
                log("watchdog: not fed, the server did not answer its own probe: \(problem)")
                return
            }
            do { try manager.notify(["WATCHDOG=1"]) } catch { log("watchdog: \(error)") }
        }
    }

    /// Tells the manager the server is ready, once it answered its own probe.
    func ready(status: String) {
        if let problem = Self.liveness(probeURL, client) {
            log("systemd: ready although the first probe failed: \(problem)")
        }
        send(["READY=1", "STATUS=\(status)", "MAINPID=\(getpid())"])
    }

    /// Tells the manager the server is stopping (it lets requests in flight finish).
    func stopping() {
        timer?.cancel()
        send(["STOPPING=1", "STATUS=stopping: letting requests in flight finish"])
    }

    private func send(_ assignments: [String]) {
        do { try manager.notify(assignments) } catch { log("systemd: \(error)") }
    }

    /// nil when the server answered `GET /metrics` (any HTTP status, or a TLS handshake that the
    /// probe's trust refused); otherwise what went wrong.
    static func liveness(_ url: String, _ client: HTTPClient) -> String? {
        do {
            _ = try client.send("GET", url)
            return nil
        } catch let e as BacklotError where e.code == .tls {
            return nil
        } catch {
            return "\(error)"
        }
    }
}
