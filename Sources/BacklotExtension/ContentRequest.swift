/// Why the agent runs a downloader extension (Apple's `BAContentRequest`, same raw values).
public enum ContentRequest: Int, Sendable, Hashable, CaseIterable {
    /// The app was installed (`backlot notify --app-install`).
    case install = 1
    /// The app was updated (`backlot notify --app-update`).
    case update = 2
    /// The agent's periodic check: only non-essential downloads may be returned.
    case periodic = 3
    /// The device's preferred languages changed (Apple's iOS 27 `languageChange`): the agent
    /// noticed it and reconciles the localized packs; only non-essential downloads may be returned.
    case languageChange = 4

    /// `install`, `update`, `periodic` or `languageChange`, as the extension protocol, the
    /// command line and the agent's log write it.
    public var name: String {
        switch self {
        case .install: "install"
        case .update: "update"
        case .periodic: "periodic"
        case .languageChange: "languageChange"
        }
    }

    /// Whether the request may return essential downloads (only the installation events may).
    public var allowsEssentialDownloads: Bool { self == .install || self == .update }

    public init?(name: String) {
        guard let r = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = r
    }
}

public typealias BAContentRequest = ContentRequest
