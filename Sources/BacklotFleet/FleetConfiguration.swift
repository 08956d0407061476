import BacklotBasics
import BacklotCrypto
import BacklotProtocol
import Foundation

/// What `backlot fleet` simulates: how many devices, checking which catalog, how often, for how long.
///
/// ```swift
/// var configuration = FleetConfiguration(
///     catalogURL: URL(string: "http://127.0.0.1:8080/v1/apps/com.example.game/production/catalog.json")!,
///     trustedKeys: [key], folder: "/tmp/fleet")
/// configuration.devices = 1_000
/// configuration.duration = 120
/// ```
public struct FleetConfiguration: Sendable {
    /// The catalog every device checks; its host must be a loopback address (``check()``).
    public var catalogURL: URL
    public var trustedKeys: [Ed25519.PublicKey]
    /// The certificate authority of an HTTPS catalog (the local CA of `backlot serve`, or an edge's).
    public var caFile: String?
    /// Where the devices' containers and the content they share are made (emptied first).
    public var folder: String
    /// The packs devices hold; nil: every pack the catalog offers when the fleet starts.
    public var packs: Set<String>?
    /// How many devices (1 to ``mostDevices``).
    public var devices = 1_000
    /// Seconds the fleet runs; checks are started until then, and those in flight end by themselves.
    public var duration: TimeInterval = 60
    /// Seconds between a device's checks (the agent's periodic interval, shortened to fit a run).
    public var checkInterval: TimeInterval = 60
    /// The spread of each device's checks (``CheckSchedule/jitter``).
    public var jitter = 0.2
    /// Seconds before a failed check's first retry (``CheckSchedule/firstRetry``); it doubles up to ``checkInterval``.
    public var firstRetry: TimeInterval = 2
    /// Devices checking or installing at the same moment, at most (each on a thread of its own).
    public var concurrency = 32
    /// Whether devices start holding the release the catalog offers at start (installed once,
    /// then shared by every device), rather than empty (each device then downloads it whole).
    public var startInstalled = true
    /// Whether devices send their reports to the server (`POST /api/apps/APP/reports`), as apps do by default.
    public var sendsReports = true
    /// Seconds between two samples of which release devices hold (the adoption curve).
    public var sampleInterval: TimeInterval = 5
    /// How many devices' files are checked against their SHA-256 at the end (wrong bytes fail the run).
    public var verifiedDevices = 8
    /// The seed of every random choice (first checks, jitter, which devices are verified), printed in the report.
    public var seed: UInt64 = UInt64.random(in: 0...UInt64(UInt32.max))

    /// Ends the run before ``duration`` once every device holds this (`"PACK@VERSION"`, as the
    /// report's `holding` names it), seen at a sample: a release storm is over when all have it.
    public var stopWhenAllHold: String?

    /// Ends the run before ``duration`` once this says so of a sample's holding (devices by
    /// `"PACK@VERSION"`): a staged rollout is over when its share of the fleet has the release.
    ///
    /// ```swift
    /// configuration.stopWhen = { holding in holding["Levels@2"] == 500 }
    /// ```
    public var stopWhen: (@Sendable (_ holding: [String: Int]) -> Bool)?

    /// The most devices one process simulates.
    public static let mostDevices = 100_000
    /// The longest run: a day.
    public static let longestDuration: TimeInterval = 86_400

    public init(catalogURL: URL, trustedKeys: [Ed25519.PublicKey], folder: String) {
        self.catalogURL = catalogURL
        self.trustedKeys = trustedKeys
        self.folder = folder
    }

    /// Refuses what a fleet must not do: a target that is not this machine (a simulated fleet is a
    /// load test, and load tests talk to loopback only), and numbers out of their ranges.
    /// - Throws: ``BacklotError/Code/usage`` naming the setting and its range.
    public func check() throws {
        guard let host = catalogURL.host, Self.isLoopback(host) else {
            throw BacklotError(
                .usage,
                "the fleet's catalog must be on this machine (127.0.0.0/8, ::1 or localhost), not \(catalogURL.host ?? "no host")",
                context: catalogURL.absoluteString,
                hint: "a simulated fleet is a load test: run the server or its edge on loopback")
        }
        func refuse(_ name: String, _ range: String) -> BacklotError {
            BacklotError(.usage, "--\(name) must be \(range)")
        }
        guard (1...Self.mostDevices).contains(devices) else { throw refuse("devices", "1 to \(Self.mostDevices)") }
        guard duration > 0, duration <= Self.longestDuration else { throw refuse("duration", "1 to 86400 seconds") }
        guard checkInterval >= 1, checkInterval <= Self.longestDuration else {
            throw refuse("check-interval", "1 to 86400 seconds")
        }
        guard (1...1024).contains(concurrency) else { throw refuse("concurrency", "1 to 1024") }
        guard jitter >= 0, jitter <= 0.9 else { throw refuse("jitter", "0 to 0.9") }
        guard sampleInterval >= 0.1 else { throw refuse("sample-interval", "at least 0.1 s") }
        guard firstRetry >= 0.1 else { throw refuse("first-retry", "at least 0.1 s") }
    }

    /// Whether `host` names this machine: `localhost`, an address of 127.0.0.0/8, or `::1`.
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).lowercased()
        if bare == "localhost" || bare == "::1" || bare == "0:0:0:0:0:0:0:1" { return true }
        let parts = bare.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "127" else { return false }
        return parts.allSatisfy { part in CheckedInteger.parse(part, as: UInt8.self) != nil }
    }
}
