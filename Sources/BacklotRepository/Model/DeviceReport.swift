import BacklotProtocol

/// One device's report, as ``DeviceReports/add(_:app:now:)`` adds it up: what the device holds
/// now, what it said it held earlier the same UTC day, and installs it started, finished and
/// failed. Nothing in it names the device.
///
/// ```swift
/// try repository.deviceReports.add(
///     DeviceReport(channel: .production, held: [.init(pack: "Levels", version: 3)]), app: "com.example.game")
/// ```
public struct DeviceReport: Sendable, Hashable {
    /// A version of a pack.
    public struct Release: Sendable, Hashable {
        public var pack: String
        public var version: Int
        public init(pack: String, version: Int) {
            self.pack = pack
            self.version = version
        }
    }

    /// Installs of one release since the device's last report.
    public struct Installs: Sendable, Hashable {
        public var release: Release
        public var started: Int
        public var finished: Int
        public var failed: Int
        public init(pack: String, version: Int, started: Int = 0, finished: Int = 0, failed: Int = 0) {
            release = Release(pack: pack, version: version)
            self.started = started
            self.finished = finished
            self.failed = failed
        }
    }

    public var channel: Channel
    /// What the device holds now; nil when unchanged since its earlier report today.
    public var held: [Release]?
    /// What its earlier report of the same UTC day said it held; nil on the day's first.
    public var earlierToday: [Release]?
    public var installs: [Installs]?

    public init(
        channel: Channel, held: [Release]? = nil, earlierToday: [Release]? = nil, installs: [Installs]? = nil
    ) {
        self.channel = channel
        self.held = held
        self.earlierToday = earlierToday
        self.installs = installs
    }
}
