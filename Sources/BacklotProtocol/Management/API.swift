/// The management API as data: every endpoint (``endpoints``), the types of its bodies and
/// answers (`API.App`, `API.VersionCreate`, …, named as in the OpenAPI document's schemas and
/// encoded with `Codable` under their wire names), and the limits both sides check (``Limits``).
/// The server, the OpenAPI document (``OpenAPIDocument``), the CLI's client and the tests read
/// them from here; nothing else spells an API path or field (docs/protocol.md §7).
///
/// ```swift
/// let request = API.AppCreate(id: "com.example.game", fourEyes: true)
/// let body = try JSONEncoder().encode(request)          // {"fourEyes":true,"id":"com.example.game"}
/// let path = API.createApp.path()                       // "/api/apps"
/// ```
public enum API {
    /// Where every endpoint's path starts (`/api`), and the prefix of a path under it (`/api/`).
    public static let root = "/api"
    public static let pathPrefix = root + "/"

    /// Every endpoint, in the order the OpenAPI document and `--help` texts list them.
    public static let endpoints: [any EndpointDescription] = [
        getOpenAPI, listApps, createApp, changeApp, listPacks, createPack, listVersions, createVersion, getVersion,
        deleteVersion, uploadArchive, listReleases, createRelease, approveRelease, rejectRelease, getChannel,
        rollback, rollout, setPhasedRollout, getPhasedRollout, withdraw, listTokens, createToken, revokeToken,
        rotateToken, listAudit, getDownloads, getAdoption, reportDevice, getKeys, whoami,
    ]

    /// The bounds of what the API accepts, checked by the server and stated by the OpenAPI document.
    public enum Limits {
        /// The largest JSON body a route buffers; a larger one gets 413 before it is read.
        public static let bodyBytes = 64 << 10
        /// The largest byte count or offset the API accepts (what SQLite's 64-bit signed integers hold).
        public static let largestByteCount = UInt64(Int64.max)
        /// Every app's quota and the largest archive a version may declare: Apple's 200 GB, which
        /// no option changes.
        public static let quotaBytes: UInt64 = 200_000_000_000
        /// The longest reason a rejection records, in characters (shown in `releases list`).
        public static let longestReason = 2000
        /// The longest token label, in characters.
        public static let longestTokenLabel = 200
        /// A token's shortest and longest lifetime, in seconds (a minute; ten years).
        public static let shortestTokenLifetime: Int64 = 60
        public static let longestTokenLifetime: Int64 = 315_360_000
        /// The most entries one page of the audit trail holds.
        public static let auditPageLimit = 500
        /// The most days one download report covers.
        public static let longestDownloadReport = 90
        /// The longest release notes of a version, in characters.
        public static let longestNotes = 4000
        /// The lowest rollout share above 0: one basis point.
        public static let lowestPercent = 0.01
        /// The most releases one device report lists in each of `held`, `earlierToday` and `installs`.
        public static let reportEntries = 256
        /// The most installs of one release one report counts in each of `started`, `finished`, `failed`.
        public static let installsPerReport = 1000
        /// Adoption figures below this many are not shown (k-anonymity): "< 10".
        public static let adoptionThreshold = 10
        /// The most steps of a phased rollout.
        public static let phaseSteps = 10
        /// The shortest and longest step of a phased rollout, in seconds (a minute; 30 days).
        public static let shortestPhaseStep = 60
        public static let longestPhaseStep = 30 * 86_400
    }

    /// The statuses a release request can have.
    public static let releaseStatuses = ["pending", "approved", "rejected", "superseded"]

    /// The actions the audit trail records (``AuditAction``'s wire names).
    public static let auditActions: [String] = AuditAction.allCases.map(\.rawValue)

    /// What a download row counts.
    public static let downloadKinds = ["catalog", "pack", "delta", "appleManifest", "applePack"]
}
