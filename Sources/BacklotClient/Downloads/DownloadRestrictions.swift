import BacklotBasics
import BacklotInfoPlist

/// What a container may download before the app is first launched (Apple's
/// `BAInitialDownloadRestrictions` and install-size keys), read from an Info.plist or set directly.
public struct DownloadRestrictions: Sendable, Hashable {
    /// Bytes (as transferred) that non-essential downloads may use before the first launch.
    public var downloadAllowance: UInt64
    /// Bytes that essential downloads may use before the first launch.
    public var essentialDownloadAllowance: UInt64
    /// Hosts that may be downloaded from before the first launch (`*.example.com` covers subdomains).
    public var domainAllowList: [String]
    /// Largest total size of non-essential downloads (`BAMaxInstallSize`), if set.
    public var maxInstallSize: UInt64?
    /// Largest total size of essential downloads (`BAEssentialMaxInstallSize`), if set.
    public var essentialMaxInstallSize: UInt64?
    /// Whether the allowances and the domain allow list apply before the first launch (false:
    /// only the install-size caps apply, for an app with no `BAInitialDownloadRestrictions`).
    public var appliesBeforeFirstLaunch = true

    public init(
        downloadAllowance: UInt64, essentialDownloadAllowance: UInt64, domainAllowList: [String],
        maxInstallSize: UInt64? = nil, essentialMaxInstallSize: UInt64? = nil
    ) {
        self.downloadAllowance = downloadAllowance
        self.essentialDownloadAllowance = essentialDownloadAllowance
        self.domainAllowList = domainAllowList
        self.maxInstallSize = maxInstallSize
        self.essentialMaxInstallSize = essentialMaxInstallSize
    }

    /// Reads the keys from an app's Info.plist (checked first with ``InfoPlistChecker``).
    /// - Throws: ``BacklotError/Code/invalidInput`` listing the plist's errors.
    /// - Parameter manifestURLElsewhere: the catalog's URL is given by other means (the agent's
    ///   `BacklotCatalogURL`), so `BAManifestURL` is not checked.
    public init(infoPlist root: PlistValue, manifestURLElsewhere: Bool = false) throws {
        // Errors, and a key inside the restrictions that iOS would ignore (a typo here silently
        // lifts a limit): each is named.
        let errors = InfoPlistChecker().check(root).filter {
            ($0.severity == .error || $0.rule == "restrictions.unknownKey")
                && !(manifestURLElsewhere && $0.keyPath == "BAManifestURL")
        }
        guard errors.isEmpty, let plist = root.dictionary, let r = plist["BAInitialDownloadRestrictions"]?.dictionary
        else {
            throw BacklotError(
                .invalidInput,
                "the Info.plist's download restrictions are invalid: \(errors.map(\.description).joined(separator: "; "))",
                hint: "run backlot plist check on it")
        }
        func size(_ v: PlistValue?) -> UInt64? {
            switch v {
            case .integer(let n)?: UInt64(exactly: n)  // negative: nil (the checker reported it)
            case .unsignedInteger(let n)?: n
            default: nil
            }
        }
        self.init(
            downloadAllowance: size(r["BADownloadAllowance"]) ?? 0,
            essentialDownloadAllowance: size(r["BAEssentialDownloadAllowance"]) ?? 0,
            domainAllowList: r["BADownloadDomainAllowList"]?.array?.compactMap(\.string) ?? [],
            maxInstallSize: size(plist["BAMaxInstallSize"]),
            essentialMaxInstallSize: size(plist["BAEssentialMaxInstallSize"]))
    }

    /// Whether `host` is on the allow list (`*.example.com` matches `a.example.com`, not `example.com`).
    public func allows(host: String) -> Bool {
        let h = host.lowercased()
        return domainAllowList.contains { pattern in
            let p = pattern.lowercased()
            if p.hasPrefix("*.") { return h.hasSuffix(p.dropFirst(1)) && h.count > p.count - 1 }
            return h == p
        }
    }
}
