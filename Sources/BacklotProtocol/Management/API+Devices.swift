import BacklotBasics

// What devices report and what the studio reads of it (docs/privacy.md): releases held and
// installs started, finished and failed, added up per app, channel, day, pack and version. No
// member names a device.
extension API {
    /// A release a device holds: a pack's version.
    public struct HeldRelease: Codable, Sendable, Hashable {
        public var pack: String
        public var version: Int
        public init(pack: String, version: Int) {
            self.pack = pack
            self.version = version
        }
    }

    /// The installs of one release a device started, finished and saw fail since its last report.
    public struct InstallCounts: Codable, Sendable, Hashable {
        public var pack: String
        public var version: Int
        public var started: Int
        public var finished: Int
        public var failed: Int
        public init(pack: String, version: Int, started: Int = 0, finished: Int = 0, failed: Int = 0) {
            self.pack = pack
            self.version = version
            self.started = started
            self.finished = finished
            self.failed = failed
        }
    }

    /// The body of `POST /api/apps/{app}/reports`: one device's report, without anything that
    /// names the device.
    ///
    /// A device sends `held` with its first report of a UTC day (it is then counted once that day,
    /// and once per release it holds) and again when what it holds changed that day, with
    /// `earlierToday` naming what it reported before (those counts move to the new releases, so a
    /// device is never counted twice a day). `installs` are the outcomes since its last report.
    ///
    /// ```swift
    /// let report = API.DeviceReport(
    ///     channel: .production, held: [.init(pack: "Levels", version: 3)], earlierToday: nil,
    ///     installs: [.init(pack: "Levels", version: 3, started: 1, finished: 1)])
    /// ```
    public struct DeviceReport: Codable, Sendable, Hashable {
        public var channel: Channel
        /// The releases the device holds now; absent when it reports only installs.
        public var held: [HeldRelease]?
        /// What its earlier report of the same UTC day said it held; absent on the day's first report.
        public var earlierToday: [HeldRelease]?
        /// Install outcomes since the last report.
        public var installs: [InstallCounts]?
        public init(
            channel: Channel, held: [HeldRelease]? = nil, earlierToday: [HeldRelease]? = nil,
            installs: [InstallCounts]? = nil
        ) {
            self.channel = channel
            self.held = held
            self.earlierToday = earlierToday
            self.installs = installs
        }
    }

    /// The answer to a report: how many of its entries were counted (a pack or version the app
    /// does not have is not).
    public struct ReportCounted: Codable, Sendable, Hashable {
        public var counted: Int
        public init(counted: Int) { self.counted = counted }
    }

    /// One UTC day's figures of one release on one channel (pack and version null: the devices
    /// of the app that reported that day). A figure below ``Adoption/threshold`` is null.
    public struct AdoptionRow: Codable, Sendable, Hashable {
        /// `YYYY-MM-DD`.
        public var date: String
        public var channel: Channel
        @NullWhenAbsent public var pack: String?
        @NullWhenAbsent public var version: Int?
        /// Devices that held the release that day (or, without a pack, that reported).
        @NullWhenAbsent public var devices: Int64?
        @NullWhenAbsent public var started: Int64?
        @NullWhenAbsent public var finished: Int64?
        @NullWhenAbsent public var failed: Int64?
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

    /// An app's adoption from `from` to `to` (`GET …/adoption`): what its devices reported.
    public struct Adoption: Codable, Sendable, Hashable {
        public var app: String
        public var from: String
        public var to: String
        /// Figures below it are null (shown "< threshold"): a small group of devices is not singled out.
        public var threshold: Int
        public var rows: [AdoptionRow]
        public init(app: String, from: String, to: String, threshold: Int, rows: [AdoptionRow]) {
            self.app = app
            self.from = from
            self.to = to
            self.threshold = threshold
            self.rows = rows
        }
    }

    /// The body of `POST …/packs/{pack}/phases`: raise the production candidate's share step by
    /// step, one step every `stepSeconds`, halting on its own when the candidate fails more often
    /// than the live version.
    public struct PhasedRolloutRequest: Codable, Sendable, Hashable {
        /// The shares, taken in rising order (a share given twice, once); the last is usually 100
        /// (which promotes the candidate).
        public var steps: [RolloutShare]
        public var stepSeconds: Int
        public init(steps: [RolloutShare], stepSeconds: Int) {
            self.steps = steps
            self.stepSeconds = stepSeconds
        }
    }

    /// A production pack's phased rollout and where it stands.
    public struct PhasedRollout: Codable, Sendable, Hashable {
        public var app: String
        public var pack: String
        /// The candidate it rolls out.
        public var version: Int
        public var steps: [RolloutShare]
        public var stepSeconds: Int
        /// The step reached (0-based index into `steps`).
        public var step: Int
        /// When that step was taken.
        public var stepSince: String
        /// One of ``API/phaseStates``.
        public var state: String
        /// Why it halted or was cancelled.
        @NullWhenAbsent public var reason: String?
        /// Who set it: the rollout's steps are theirs.
        @NullWhenAbsent public var setBy: String?
        public init(
            app: String, pack: String, version: Int, steps: [RolloutShare], stepSeconds: Int, step: Int,
            stepSince: String, state: String, reason: String?, setBy: String?
        ) {
            self.app = app
            self.pack = pack
            self.version = version
            self.steps = steps
            self.stepSeconds = stepSeconds
            self.step = step
            self.stepSince = stepSince
            self.state = state
            self.reason = reason
            self.setBy = setBy
        }
    }

    /// The states of a phased rollout: `running`, `halted` (the candidate failed more often than the
    /// live version: its share is 0), `done` (the last step was taken), `cancelled` (a reviewer
    /// changed the rollout by hand, or the candidate changed).
    public static let phaseStates = ["running", "halted", "done", "cancelled"]
}
