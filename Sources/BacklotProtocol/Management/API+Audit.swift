extension API {
    /// An action the audit trail records, by its wire name: an audit entry's `action`, and the
    /// `action` filter of `GET /api/audit` (docs/protocol.md, "The audit trail").
    ///
    /// ```swift
    /// API.AuditAction.releaseApprove.rawValue   // "release.approve"
    /// API.AuditAction(rawValue: "rollback")     // .rollback
    /// ```
    public enum AuditAction: String, CaseIterable, Sendable {
        case appCreate = "app.create"
        case appUpdate = "app.update"
        case packCreate = "pack.create"
        case versionCreate = "version.create"
        case versionUploaded = "version.uploaded"
        case versionProcessed = "version.processed"
        case versionFailed = "version.failed"
        case versionDelete = "version.delete"
        case versionAbandoned = "version.abandoned"
        case releaseRequest = "release.request"
        case releaseApprove = "release.approve"
        case releaseReject = "release.reject"
        case rolloutSet = "rollout.set"
        case rollback
        case withdraw
        case tokenCreate = "token.create"
        case tokenRevoke = "token.revoke"
        case tokenRotate = "token.rotate"
        case keyRotate = "key.rotate"
        case catalogResign = "catalog.resign"
        case storageAdopt = "storage.adopt"
        case rolloutPhase = "rollout.phase"
        case rolloutStep = "rollout.step"
        case rolloutHalt = "rollout.halt"
    }

    /// A key of an audit entry's `details` object: what the action changed, each value a string.
    ///
    /// ```swift
    /// let details: [API.AuditDetail: String] = [.channel: "production", .percent: "10 %"]
    /// ```
    public enum AuditDetail: String, CaseIterable, Sendable {
        /// The size an upload declared, in bytes.
        case bytes
        /// A rollback's dropped candidate (`dropped`).
        case candidate
        /// The channel the action was on.
        case channel
        /// Why processing failed.
        case error
        /// Whether the app requires a second person to approve releases (`true`/`false`).
        case fourEyes
        /// The version, key or storage an action moved away from.
        case from
        /// The new signing key's id.
        case keyId
        /// The number of the key list a rotation published.
        case keyList
        /// A rollout's share of devices (`10 %`).
        case percent
        /// The person a token was made for.
        case person
        /// Why a release was rejected, a rollout halted or an upload abandoned.
        case reason
        /// The release request's id.
        case requestId
        /// A token's role.
        case role
        /// Above which rollout share a second reviewer is needed (or `off`).
        case secondReviewerAbove
        /// Who set the phased rollout whose step this is.
        case setBy
        /// The processed archive's SHA-256.
        case sha256
        /// The step of a phased rollout (1 for the first).
        case step
        /// Seconds between the steps of a phased rollout.
        case stepSeconds
        /// A phased rollout's shares, comma-separated.
        case steps
        /// A release's status once requested (`released`, `pending`).
        case status
        /// The token's id.
        case tokenId
        /// The token's label.
        case tokenLabel
        /// The version, key list or storage an action moved to.
        case to
        /// The version a catalog was re-signed at.
        case version
    }
}
