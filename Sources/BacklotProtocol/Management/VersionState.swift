/// The processing state of an uploaded version (App Store Connect's names).
public enum VersionState: String, Sendable, Hashable, CaseIterable {
    case awaitingUpload = "AWAITING_UPLOAD"
    case processing = "PROCESSING"
    case complete = "COMPLETE"
    case failed = "FAILED"
}

/// What kind of archive a version holds.
public enum ArchiveFormat: String, Sendable, Hashable, CaseIterable {
    /// A Backlot `.pack` (docs/format.md), listed in Backlot catalogs.
    case pack
    /// An Apple Archive `.aar` from `ba-package`, stored as is and listed in Apple download manifests.
    case appleArchive = "aar"
}
