import BacklotProtocol

/// An app's adoption figures over a range of UTC days (``DeviceReports/report(app:days:now:)``):
/// per day, channel, pack and version, the devices that held it and the installs started,
/// finished and failed. A figure below ``threshold`` is nil, so that no small group is singled out.
///
/// ```swift
/// let report = try repository.deviceReports.report(app: "com.example.game", days: 7)
/// for row in report.rows { print(row.date, row.pack ?? "(devices)", row.devices ?? 0) }
/// ```
public struct AdoptionReport: Sendable, Hashable {
    /// One day's figures for a release; the row of no pack and no version counts the devices that
    /// reported that day.
    public struct Row: Sendable, Hashable {
        /// The UTC day, `YYYY-MM-DD`.
        public let date: String
        public let channel: Channel
        public let pack: String?
        public let version: Int?
        public let devices: Int64?
        public let started: Int64?
        public let finished: Int64?
        public let failed: Int64?

        public init(
            date: String, channel: Channel, pack: String?, version: Int?, devices: Int64?, started: Int64?,
            finished: Int64?, failed: Int64?
        ) {
            self.date = date
            self.channel = channel
            self.pack = pack
            self.version = version
            self.devices = devices
            self.started = started
            self.finished = finished
            self.failed = failed
        }
    }

    public let app: String
    /// The first and last UTC days, `YYYY-MM-DD`.
    public let from: String
    public let to: String
    /// The smallest figure shown.
    public let threshold: Int
    public let rows: [Row]
}
