/// What a management-API token may do.
public enum Role: String, Sendable, Hashable, CaseIterable {
    /// Everything, including creating tokens and apps.
    case admin
    /// Create packs and versions, upload archives.
    case uploader
    /// Approve or reject releases to the external and production channels.
    case reviewer
    /// Read apps, packs, versions and releases.
    case reader

    /// Whether this role includes `other`'s permissions.
    public func includes(_ other: Role) -> Bool {
        self == .admin || self == other || other == .reader
    }
}
