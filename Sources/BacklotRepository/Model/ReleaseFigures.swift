import BacklotProtocol

/// What `/metrics` shows of one release's device reports (``DeviceReports/metrics(now:)``): the
/// devices that held it on the last whole UTC day and its installs over the figures kept; a figure
/// below ``API/Limits/adoptionThreshold`` is nil.
public struct ReleaseFigures: Sendable, Hashable {
    public let app: String
    public let channel: Channel
    public let pack: String
    public let version: Int
    public let devices: Int64?
    public let started: Int64?
    public let finished: Int64?
    public let failed: Int64?

    public init(
        app: String, channel: Channel, pack: String, version: Int, devices: Int64?, started: Int64?, finished: Int64?,
        failed: Int64?
    ) {
        self.app = app
        self.channel = channel
        self.pack = pack
        self.version = version
        self.devices = devices
        self.started = started
        self.finished = finished
        self.failed = failed
    }
}
