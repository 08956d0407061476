/// What the extension may still schedule before the app's first launch (Apple's `BAAppExtensionInfo`).
public struct AppExtensionInfo: Sendable, Hashable {
    /// Bytes of non-essential downloads that may still be scheduled before the first launch;
    /// nil when downloads are not restricted (the app has been launched, or has no restrictions).
    public var restrictedDownloadSizeRemaining: UInt64?
    /// The same for essential downloads.
    public var restrictedEssentialDownloadSizeRemaining: UInt64?

    public init(restrictedDownloadSizeRemaining: UInt64? = nil, restrictedEssentialDownloadSizeRemaining: UInt64? = nil)
    {
        self.restrictedDownloadSizeRemaining = restrictedDownloadSizeRemaining
        self.restrictedEssentialDownloadSizeRemaining = restrictedEssentialDownloadSizeRemaining
    }
}

public typealias BAAppExtensionInfo = AppExtensionInfo
