import BacklotBasics

// Apps and packs, as the management API sends and reads them.
extension API {
    /// An app (`GET /api/apps`, `POST /api/apps`).
    public struct App: Codable, Sendable, Hashable {
        public var id: String
        /// RFC 3339, UTC.
        public var created: String
        /// Whether a release request must be approved by another person than the one who made it.
        public var fourEyes: Bool
        public var quotaBytes: UInt64
        /// The second-reviewer rule: a production rollout step above this share (percent) needs
        /// another person than the one who approved the release; null: no rule.
        @NullWhenAbsent public var secondReviewerAbove: Double?

        public init(id: String, created: String, fourEyes: Bool, quotaBytes: UInt64, secondReviewerAbove: Double?) {
            self.secondReviewerAbove = secondReviewerAbove
            self.id = id
            self.created = created
            self.fourEyes = fourEyes
            self.quotaBytes = quotaBytes
        }
    }

    /// Every app, by ID.
    public struct AppList: Codable, Sendable, Hashable {
        public var apps: [App]
        public init(apps: [App]) { self.apps = apps }
    }

    /// The body of `POST /api/apps`.
    public struct AppCreate: Codable, Sendable, Hashable {
        public var id: String
        public var fourEyes: Bool?
        public init(id: String, fourEyes: Bool? = nil) {
            self.id = id
            self.fourEyes = fourEyes
        }
    }

    /// The body of `PATCH /api/apps/{app}`: what to change (an absent member is left as it is).
    public struct AppChange: Codable, Sendable, Hashable {
        public var fourEyes: Bool?
        /// The second-reviewer rule's share; 0 turns the rule off.
        public var secondReviewerAbove: RolloutShare?
        public init(fourEyes: Bool? = nil, secondReviewerAbove: RolloutShare? = nil) {
            self.fourEyes = fourEyes
            self.secondReviewerAbove = secondReviewerAbove
        }
    }

    /// A pack with its version count.
    public struct Pack: Codable, Sendable, Hashable {
        public var id: String
        public var created: String
        public var versions: Int
        /// The newest version's number; null before the first.
        @NullWhenAbsent public var latest: Int?

        public init(id: String, created: String, versions: Int, latest: Int?) {
            self.id = id
            self.created = created
            self.versions = versions
            self.latest = latest
        }
    }

    /// An app's packs, by ID.
    public struct PackList: Codable, Sendable, Hashable {
        public var packs: [Pack]
        public init(packs: [Pack]) { self.packs = packs }
    }

    /// The body of `POST /api/apps/{app}/packs`.
    public struct PackCreate: Codable, Sendable, Hashable {
        public var id: String
        public init(id: String) { self.id = id }
    }

    /// The answer of `POST /api/apps/{app}/packs`.
    public struct PackCreated: Codable, Sendable, Hashable {
        public var app: String
        public var id: String
        public init(app: String, id: String) {
            self.app = app
            self.id = id
        }
    }

    /// The answer of `DELETE …/versions/{version}`.
    public struct Deleted: Codable, Sendable, Hashable {
        public var deleted: Bool
        public init(deleted: Bool = true) { self.deleted = deleted }
    }
}
