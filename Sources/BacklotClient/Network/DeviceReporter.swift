import BacklotBasics
import BacklotContainer
import BacklotHTTPClient
import BacklotProtocol
import Foundation

/// Sends the device's reports to the server that publishes its catalog (`POST
/// /api/apps/APP/reports`, docs/privacy.md): the releases the container holds, with the day's
/// first report and again when they change that day, and how many installs of each release
/// started, finished and failed. Nothing in a report names the device; the server adds reports up.
///
/// A report is never worth an install: failures are kept in the container (`state.sqlite`) and
/// sent with the next report, and nothing here throws.
///
/// ```swift
/// let reporter = DeviceReporter(container: c, http: http, catalogURL: url, app: "com.example.game", channel: .production)
/// reporter.record(.started, pack: "Levels", version: 3)
/// reporter.sendIfDue()
/// ```
struct DeviceReporter: Sendable {
    enum Outcome { case started, finished, failed }

    let container: ClientContainer
    let http: HTTPClient
    /// Where reports go; nil when the app turned them off.
    let url: String?
    let channel: Channel

    init(container: ClientContainer, http: HTTPClient, catalogURL: URL, app: String, channel: Channel, enabled: Bool) {
        self.container = container
        self.http = http
        self.channel = channel
        url = enabled ? Self.reportURL(catalogURL: catalogURL, app: app) : nil
    }

    /// The report endpoint beside a catalog: `BASE/v1/apps/APP/CHANNEL/catalog.json` gives
    /// `BASE/api/apps/APP/reports` (nil when the URL is not a catalog's).
    static func reportURL(catalogURL: URL, app: String) -> String? {
        guard var c = URLComponents(url: catalogURL, resolvingAgainstBaseURL: false) else { return nil }
        let parts = c.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 6 else { return nil }
        let base = parts.dropLast(5).joined(separator: "/")
        c.percentEncodedPath = base + API.reportDevice.path([.app: app])
        c.percentEncodedQuery = nil
        c.fragment = nil
        return c.string
    }

    private static func decode<T: Decodable>(_ text: String?, as: T.Type) -> T? {
        text.flatMap { try? JSONDecoder().decode(T.self, from: Data($0.utf8)) }
    }

    private static func encode<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }

    /// Counts an install's start or outcome, to be sent with the next report.
    func record(_ outcome: Outcome, pack: String, version: Int) {
        guard url != nil else { return }
        try? container.updateMeta(.unreportedInstalls) { old in
            var list = Self.decode(old, as: [API.InstallCounts].self) ?? []
            let index =
                list.firstIndex { $0.pack == pack && $0.version == version }
                ?? {
                    list.append(API.InstallCounts(pack: pack, version: version))
                    return list.count - 1
                }()
            let most = API.Limits.installsPerReport
            switch outcome {
            case .started: list[index].started = min(list[index].started + 1, most)
            case .finished: list[index].finished = min(list[index].finished + 1, most)
            case .failed: list[index].failed = min(list[index].failed + 1, most)
            }
            return Self.encode(Array(list.suffix(API.Limits.reportEntries)))
        }
    }

    /// Sends a report when one is due: the day's first, what the container holds changed since
    /// the last, or installs not reported yet. What was sent is then marked reported; a failure
    /// leaves everything for the next call.
    /// - Returns: whether a report was sent and accepted.
    @discardableResult
    func sendIfDue(now: Date = Date()) -> Bool {
        // One process at a time (the app and the agent share the container): another sending now
        // sends what is due; this one would count the device twice.
        guard url != nil, let held = try? container.layout.acquire(.report, waiting: false) else { return false }
        defer { held.release() }
        return send(now: now)
    }

    private func send(now: Date) -> Bool {
        guard let url, let installed = try? container.installed() else { return false }
        let today = CivilDate.utcDayText(secondsSince1970: now.timeIntervalSince1970)
        let held = installed.map { API.HeldRelease(pack: $0.id, version: $0.version) }.sorted {
            ($0.pack, $0.version) < ($1.pack, $1.version)
        }
        let day = try? container.meta(.reportDay)
        let earlier = Self.decode(try? container.meta(.reportedHeld), as: [API.HeldRelease].self)
        let installs = Self.decode(try? container.meta(.unreportedInstalls), as: [API.InstallCounts].self) ?? []
        var report = API.DeviceReport(channel: channel)
        if day != today {
            report.held = Array(held.prefix(API.Limits.reportEntries))
        } else if earlier != held {
            report.held = Array(held.prefix(API.Limits.reportEntries))
            report.earlierToday = earlier ?? []
        }
        if !installs.isEmpty { report.installs = Array(installs.prefix(API.Limits.reportEntries)) }
        guard report.held != nil || report.installs != nil,
            let body = try? JSONEncoder().encode(report),
            let answer = try? http.send(
                "POST", url, headers: ["Content-Type": "application/json"], body: .bytes(Array(body)),
                bodyLimit: 4096),
            (200...299).contains(answer.status)
        else { return false }
        try? container.updateMeta(.unreportedInstalls) { old in
            var list = Self.decode(old, as: [API.InstallCounts].self) ?? []
            for sent in report.installs ?? [] {
                guard let i = list.firstIndex(where: { $0.pack == sent.pack && $0.version == sent.version }) else {
                    continue
                }
                list[i].started = max(0, list[i].started - sent.started)
                list[i].finished = max(0, list[i].finished - sent.finished)
                list[i].failed = max(0, list[i].failed - sent.failed)
            }
            return Self.encode(list.filter { $0.started + $0.finished + $0.failed > 0 })
        }
        if report.held != nil {
            try? container.setMeta(.reportDay, today)
            try? container.setMeta(.reportedHeld, Self.encode(held))
        }
        return true
    }
}
