import BacklotBasics

// Release requests, plans and what a channel publishes.
extension API {
    /// A token named in a release request: who asked, who decided, and the person it belongs to.
    public struct TokenReference: Codable, Sendable, Hashable {
        public var id: Int
        public var label: String
        /// The person (or service account); `token #ID` for a token made before tokens had one.
        public var person: String
        public init(id: Int, label: String, person: String) {
            self.id = id
            self.label = label
            self.person = person
        }
    }

    /// A request to release a version on the external or production channel.
    public struct ReleaseRequest: Codable, Sendable, Hashable {
        public var id: Int
        public var app: String
        public var channel: Channel
        public var pack: String
        public var version: Int
        /// The share of devices a production release is rolled out to; null: every device.
        @NullWhenAbsent public var rolloutPercent: Double?
        /// One of ``API/releaseStatuses``.
        public var status: String
        public var requested: String
        @NullWhenAbsent public var requestedBy: TokenReference?
        @NullWhenAbsent public var decided: String?
        @NullWhenAbsent public var decidedBy: TokenReference?
        /// Why it was rejected.
        @NullWhenAbsent public var reason: String?
        /// The release notes of the version.
        @NullWhenAbsent public var notes: String?

        public init(
            id: Int, app: String, channel: Channel, pack: String, version: Int, rolloutPercent: Double?,
            status: String, requested: String, requestedBy: TokenReference?, decided: String?,
            decidedBy: TokenReference?, reason: String?, notes: String?
        ) {
            self.notes = notes
            self.id = id
            self.app = app
            self.channel = channel
            self.pack = pack
            self.version = version
            self.rolloutPercent = rolloutPercent
            self.status = status
            self.requested = requested
            self.requestedBy = requestedBy
            self.decided = decided
            self.decidedBy = decidedBy
            self.reason = reason
        }
    }

    /// Release requests, oldest first.
    public struct ReleaseList: Codable, Sendable, Hashable {
        public var releases: [ReleaseRequest]
        public init(releases: [ReleaseRequest]) { self.releases = releases }
    }

    /// The body of `POST /api/apps/{app}/releases`.
    public struct ReleaseCreate: Codable, Sendable, Hashable {
        public var pack: String
        public var version: Int
        public var channel: Channel
        /// Production only: roll the version out to this share of devices.
        public var rollout: RolloutShare?
        /// Say what would change, change nothing.
        public var dryRun: Bool?

        public init(pack: String, version: Int, channel: Channel, rollout: RolloutShare? = nil, dryRun: Bool? = nil) {
            self.pack = pack
            self.version = version
            self.channel = channel
            self.rollout = rollout
            self.dryRun = dryRun
        }
    }

    /// The answer of `POST …/releases`: released at once (`released`), a request awaiting a
    /// reviewer (`released` false, `request`), or with `dryRun` the change it would make (a ``ReleasePlan``).
    public struct ReleaseOutcome: Codable, Sendable, Hashable {
        public var released: Bool?
        public var request: ReleaseRequest?
        public var dryRun: Bool?
        public var needsApproval: Bool?
        public var change: ReleasePlan.Change?

        public init(released: Bool, request: ReleaseRequest? = nil) {
            self.released = released
            self.request = request
        }

        public init(plan: ReleasePlan) {
            dryRun = plan.dryRun
            needsApproval = plan.needsApproval
            change = plan.change
        }

        /// The plan, when the answer is one.
        public var plan: ReleasePlan? {
            guard let dryRun, let needsApproval, let change else { return nil }
            return ReleasePlan(dryRun: dryRun, needsApproval: needsApproval, change: change)
        }
    }

    /// What a release would change (`dryRun`).
    public struct ReleasePlan: Codable, Sendable, Hashable {
        /// A side of the change: the version a channel offers and at what rollout (null: every device).
        public struct Side: Codable, Sendable, Hashable {
            @NullWhenAbsent public var version: Int?
            @NullWhenAbsent public var rolloutPercent: Double?
            public init(version: Int?, rolloutPercent: Double?) {
                self.version = version
                self.rolloutPercent = rolloutPercent
            }
        }

        /// The channel's change.
        public struct Change: Codable, Sendable, Hashable {
            public var channel: Channel
            public var pack: String
            public var from: Side
            public var to: Side
            /// The catalog version the release would publish.
            public var catalogVersion: UInt64
            public init(channel: Channel, pack: String, from: Side, to: Side, catalogVersion: UInt64) {
                self.channel = channel
                self.pack = pack
                self.from = from
                self.to = to
                self.catalogVersion = catalogVersion
            }
        }

        public var dryRun: Bool
        public var needsApproval: Bool
        public var change: Change
        public init(dryRun: Bool = true, needsApproval: Bool, change: Change) {
            self.dryRun = dryRun
            self.needsApproval = needsApproval
            self.change = change
        }
    }

    /// The body of `POST …/releases/{id}/reject`.
    public struct Rejection: Codable, Sendable, Hashable {
        public var reason: String
        public init(reason: String) { self.reason = reason }
    }

    /// The version a channel offers every device.
    public struct Live: Codable, Sendable, Hashable {
        public var version: Int
        @NullWhenAbsent public var archiveSHA256: String?
        public init(version: Int, archiveSHA256: String?) {
            self.version = version
            self.archiveSHA256 = archiveSHA256
        }
    }

    /// The version being rolled out, and to what share of devices.
    public struct Candidate: Codable, Sendable, Hashable {
        public var version: Int
        public var rolloutPercent: Double
        public init(version: Int, rolloutPercent: Double) {
            self.version = version
            self.rolloutPercent = rolloutPercent
        }
    }

    /// One pack on a channel.
    public struct ChannelPack: Codable, Sendable, Hashable {
        public var pack: String
        @NullWhenAbsent public var live: Live?
        @NullWhenAbsent public var candidate: Candidate?
        public init(pack: String, live: Live?, candidate: Candidate?) {
            self.pack = pack
            self.live = live
            self.candidate = candidate
        }
    }

    /// One pack on production after a rollout change (`POST …/rollout`).
    public struct Rollout: Codable, Sendable, Hashable {
        public var channel: Channel
        public var pack: String
        @NullWhenAbsent public var live: Live?
        @NullWhenAbsent public var candidate: Candidate?
        public init(channel: Channel, pack: ChannelPack) {
            self.channel = channel
            self.pack = pack.pack
            live = pack.live
            candidate = pack.candidate
        }
    }

    /// What a channel publishes (`GET …/channels/{channel}`); the signed catalog says the same.
    public struct ChannelState: Codable, Sendable, Hashable {
        public var app: String
        public var channel: Channel
        /// The published catalog's version; null before the first.
        @NullWhenAbsent public var catalogVersion: UInt64?
        @NullWhenAbsent public var expires: String?
        public var signingKey: String
        public var packs: [ChannelPack]
        public init(
            app: String, channel: Channel, catalogVersion: UInt64?, expires: String?, signingKey: String,
            packs: [ChannelPack]
        ) {
            self.app = app
            self.channel = channel
            self.catalogVersion = catalogVersion
            self.expires = expires
            self.signingKey = signingKey
            self.packs = packs
        }
    }

    /// The body of `POST …/rollout`: 0 halts, 100 promotes the candidate.
    public struct RolloutChange: Codable, Sendable, Hashable {
        public var percent: RolloutShare
        public init(percent: RolloutShare) { self.percent = percent }
    }

    /// The body of `POST …/rollback`: to a version, or (null) to the one before.
    public struct RollbackRequest: Codable, Sendable, Hashable {
        public var channel: Channel
        public var version: Int?
        public init(channel: Channel, version: Int? = nil) {
            self.channel = channel
            self.version = version
        }
    }

    /// What is live after a rollback.
    public struct RolledBack: Codable, Sendable, Hashable {
        public var channel: Channel
        public var pack: String
        public var version: Int
        public init(channel: Channel, pack: String, version: Int) {
            self.channel = channel
            self.pack = pack
            self.version = version
        }
    }

    /// The body of `POST …/withdraw`.
    public struct WithdrawRequest: Codable, Sendable, Hashable {
        public var channel: Channel
        public init(channel: Channel) { self.channel = channel }
    }

    /// The answer of `POST …/withdraw`.
    public struct Withdrawn: Codable, Sendable, Hashable {
        public var withdrawn: Bool
        public init(withdrawn: Bool = true) { self.withdrawn = withdrawn }
    }
}
