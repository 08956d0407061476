/// A platform an asset pack is built for: Apple's four, plus `linux`.
public enum Platform: String, Sendable, Hashable, CaseIterable, Comparable {
    case iOS, macOS, tvOS, visionOS, linux

    /// Canonical order, as listed in `allCases`.
    public static func < (a: Platform, b: Platform) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// The installation events that fetch essential and prefetch packs.
public enum InstallationEventType: String, Sendable, Hashable, CaseIterable, Comparable {
    /// The app is installed for the first time.
    case firstInstallation
    /// The app is updated to a new version.
    case subsequentUpdate

    public static func < (a: Self, b: Self) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// When a pack is downloaded (Apple's `downloadPolicy`).
public enum DownloadPolicy: Sendable, Hashable {
    /// Downloaded as part of the installation: the app waits for it.
    case essential(installationEventTypes: [InstallationEventType])
    /// Starts with the installation and may finish after the app opens.
    case prefetch(installationEventTypes: [InstallationEventType])
    /// Downloaded only when the app asks for it.
    case onDemand

    /// `essential`, `prefetch` or `onDemand`.
    public var name: String {
        switch self {
        case .essential: "essential"
        case .prefetch: "prefetch"
        case .onDemand: "onDemand"
        }
    }

    /// The events that fetch this pack (empty for on-demand packs).
    public var installationEventTypes: [InstallationEventType] {
        switch self {
        case .essential(let e), .prefetch(let e): e
        case .onDemand: []
        }
    }
}
