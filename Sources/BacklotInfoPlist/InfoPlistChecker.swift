import BacklotBasics
import Foundation

/// Checks an app's Info.plist for what the iOS runtime and App Store Connect do with its
/// Background Assets keys (`backlot plist check`), so teams building on Linux CI find out before
/// a device kills their app.
///
/// ```swift
/// let root = try PropertyListReader.read(path: "Info.plist")
/// let findings = InfoPlistChecker(defines: ["APP_GROUP": "group.com.example"]).check(root)
/// ```
public struct InfoPlistChecker: Sendable {
    /// Values for `$(VAR)` build-setting placeholders.
    public var defines: [String: String]

    public init(defines: [String: String] = [:]) {
        self.defines = defines
    }

    /// Keys that only make sense for self-hosted packs.
    static let selfHostingKeys = [
        "BAManifestURL", "BAInitialDownloadRestrictions", "BAMaxInstallSize", "BAEssentialMaxInstallSize",
    ]

    /// Every finding, errors first, in key order.
    public func check(_ root: PlistValue) -> [InfoPlistFinding] {
        var out: [InfoPlistFinding] = []
        func error(_ rule: String, _ path: String, _ message: String, fix: String? = nil) {
            out.append(InfoPlistFinding(severity: .error, rule: rule, keyPath: path, message: message, fix: fix))
        }
        func warning(_ rule: String, _ path: String, _ message: String, fix: String? = nil) {
            out.append(InfoPlistFinding(severity: .warning, rule: rule, keyPath: path, message: message, fix: fix))
        }
        guard let plist = root.dictionary else {
            error("root.dictionary", "(root)", "an Info.plist is a dictionary, not \(root.typeName)")
            return out
        }

        // Placeholders first: expand what is defined (once, left to right; a value that names
        // another placeholder is expanded in turn, a cycle is reported), report the rest.
        func expanded(_ key: String, _ value: PlistValue) -> PlistValue {
            guard case .string(let s) = value, s.contains("$(") else { return value }
            var missing: [String] = []
            var cycles: [String] = []
            var truncated = false
            let result = expand(s, active: [], missing: &missing, cycles: &cycles, truncated: &truncated)
            if !cycles.isEmpty {
                error(
                    "placeholder.cycle", key, "expands $(\(cycles[0])) inside itself, which Xcode cannot resolve",
                    fix:
                        "give \(cycles[0]) a value that does not name $(\(cycles[0])), directly or through other placeholders"
                )
            }
            if truncated {
                error(
                    "placeholder.size", key, "expands to more than \(Self.maximumExpansion) bytes",
                    fix: "check the --define values: they expand each other too many times")
            }
            if !missing.isEmpty {
                warning(
                    "placeholder.undefined", key,
                    "holds the build-setting placeholder \(missing.map { "$(\($0))" }.joined(separator: ", ")), which Xcode expands at build time",
                    fix: "pass --define \(missing[0])=VALUE to check the expanded value")
            }
            return .string(result)
        }
        var values: [String: PlistValue] = [:]
        for (k, v) in plist where k.hasPrefix("BA") { values[k] = expanded(k, v) }
        if let r = values["BAInitialDownloadRestrictions"]?.dictionary {
            var inner: [String: PlistValue] = [:]
            for (k, v) in r { inner[k] = expanded("BAInitialDownloadRestrictions.\(k)", v) }
            values["BAInitialDownloadRestrictions"] = .dictionary(inner)
        }

        // Near-misses of the keys iOS reads (a wrong case or a typo is a key iOS never sees).
        for key in plist.keys.sorted() where !Self.knownKeys.contains(key) {
            if let suggestion = Suggestion.closest(to: key, in: Self.knownKeys) {
                warning(
                    "key.unknown", key, "is not a key iOS reads, so it is ignored", fix: "did you mean \(suggestion)?")
            }
        }
        if let r = values["BAInitialDownloadRestrictions"]?.dictionary {
            for key in r.keys.sorted() where !Self.restrictionKeys.contains(key) {
                let suggestion = Suggestion.closest(to: key, in: Self.restrictionKeys)
                warning(
                    "restrictions.unknownKey", "BAInitialDownloadRestrictions.\(key)",
                    "is not a key of BAInitialDownloadRestrictions, so it is ignored",
                    fix: suggestion.map { "did you mean \($0)?" }
                        ?? "the keys are \(Self.restrictionKeys.joined(separator: ", "))")
            }
        }
        checkPermittedIdentifiers(plist, error, warning)

        let baKeys = values.keys.sorted()
        guard !baKeys.isEmpty else {
            warning(
                "keys.none", "(root)", "no Background Assets keys (BA…) were found",
                fix: "add BAAppGroupID and either BAUsesAppleHosting or BAManifestURL")
            return out
        }
        let managed = values["BAHasManagedAssetPacks"]?.bool ?? false
        let appleHosting = values["BAUsesAppleHosting"]?.bool ?? false
        for key in ["BAHasManagedAssetPacks", "BAUsesAppleHosting"] {
            if let v = values[key], v.bool == nil {
                error("type.bool", key, "must be a boolean, not \(v.typeName)", fix: "write <true/> or <false/>")
            }
        }

        if let v = values["BAAppGroupID"] {
            if v.string?.isEmpty ?? true {
                error(
                    "appGroupID.string", "BAAppGroupID", "must be a non-empty string, not \(v.typeName)",
                    fix: "write your app group, such as group.com.example.app")
            }
        } else if managed {
            error(
                "appGroupID.required", "BAAppGroupID",
                "is missing, but BAHasManagedAssetPacks is set: the app stops at launch (\"The bundle's info dictionary lacks a string value for the key BAAppGroupID\")",
                fix: "add BAAppGroupID with the app group the app and its downloader extension share"
                    + (plist["AppGroupIdentifier"] != nil ? " (AppGroupIdentifier does not count)" : ""))
        }

        if appleHosting {
            let present = Self.selfHostingKeys.filter { values[$0] != nil }
            if !present.isEmpty {
                warning(
                    "hosting.mixed", "BAUsesAppleHosting",
                    "is set together with self-hosting keys (\(present.joined(separator: ", "))): App Store Connect then treats the app as self-hosted",
                    fix:
                        "for Apple hosting omit \(present.joined(separator: ", ")); for self-hosting set BAUsesAppleHosting to false"
                )
            }
            return out
        }

        // Self-hosted (managed or not).
        if let v = values["BAManifestURL"] {
            if let s = v.string, let url = URL(string: s), let scheme = url.scheme?.lowercased(), url.host != nil {
                if scheme != "https" {
                    error(
                        "manifestURL.https", "BAManifestURL",
                        "\"\(s)\" is not an https:// URL; Background Assets stops the app (\"The 'BAManifestURL' must be a link to an 'https://' URL\")",
                        fix: "serve the manifest over HTTPS (backlot serve does, with a local CA for development)")
                }
            } else {
                error(
                    "manifestURL.invalid", "BAManifestURL",
                    "\(v.string.map { "\"\($0)\"" } ?? v.typeName) is not an absolute URL",
                    fix: "write https://host/path/manifest.json")
            }
        } else {
            error(
                "manifestURL.required", "BAManifestURL", "is missing, and the app does not use Apple hosting",
                fix: "add BAManifestURL, or set BAUsesAppleHosting to true")
        }

        checkSize("BAMaxInstallSize", values["BAMaxInstallSize"], required: false, error)
        checkSize("BAEssentialMaxInstallSize", values["BAEssentialMaxInstallSize"], required: false, error)

        guard let restrictionsValue = values["BAInitialDownloadRestrictions"] else {
            error(
                "restrictions.required", "BAInitialDownloadRestrictions",
                "is missing; a self-hosted app is stopped at launch (\"The app must contain a dictionary with a key named BAInitialDownloadRestrictions\")",
                fix:
                    "add the dictionary with BADownloadAllowance, BAEssentialDownloadAllowance and BADownloadDomainAllowList"
            )
            return out
        }
        guard let restrictions = restrictionsValue.dictionary else {
            error(
                "restrictions.type", "BAInitialDownloadRestrictions",
                "must be a dictionary, not \(restrictionsValue.typeName)")
            return out
        }
        for key in ["BADownloadAllowance", "BAEssentialDownloadAllowance"] {
            checkSize("BAInitialDownloadRestrictions.\(key)", restrictions[key], required: true, error)
        }
        if let list = restrictions["BADownloadDomainAllowList"] {
            if let entries = list.array {
                if entries.isEmpty {
                    warning(
                        "allowList.empty", "BAInitialDownloadRestrictions.BADownloadDomainAllowList",
                        "is empty, so no host may be downloaded from before the first launch",
                        fix: "list the manifest's and the packs' hosts (and CDN redirect hosts)")
                }
                for (i, e) in entries.enumerated() {
                    let path = "BAInitialDownloadRestrictions.BADownloadDomainAllowList[\(i)]"
                    guard let s = e.string else {
                        error("allowList.type", path, "must be a string, not \(e.typeName)")
                        continue
                    }
                    if !Self.isDomainPattern(s) {
                        error(
                            "allowList.domain", path, "\"\(s)\" is not a DNS name with an optional \"*.\" prefix",
                            fix: "write a host such as cdn.example.com or *.example.com, without scheme, port or path")
                    }
                }
            } else {
                error(
                    "allowList.type", "BAInitialDownloadRestrictions.BADownloadDomainAllowList",
                    "must be an array of host names, not \(list.typeName)")
            }
        } else {
            warning(
                "allowList.missing", "BAInitialDownloadRestrictions.BADownloadDomainAllowList",
                "is missing, so no host is allowed before the first launch",
                fix: "list the manifest's and the packs' hosts")
        }
        return out
    }

    /// The top-level keys iOS reads for Background Assets and background tasks.
    static let knownKeys = [
        "BAAppGroupID", "BAHasManagedAssetPacks", "BAUsesAppleHosting", "BAManifestURL",
        "BAInitialDownloadRestrictions",
        "BAMaxInstallSize", "BAEssentialMaxInstallSize", "BGTaskSchedulerPermittedIdentifiers", "UIBackgroundModes",
    ]
    /// The keys of `BAInitialDownloadRestrictions`.
    static let restrictionKeys = ["BADownloadAllowance", "BAEssentialDownloadAllowance", "BADownloadDomainAllowList"]

    /// `BGTaskSchedulerPermittedIdentifiers`: an array of distinct, non-empty identifiers without
    /// spaces (reverse-DNS by convention); tasks also need the matching `UIBackgroundModes`.
    private func checkPermittedIdentifiers(
        _ plist: [String: PlistValue], _ error: (String, String, String, String?) -> Void,
        _ warning: (String, String, String, String?) -> Void
    ) {
        let key = "BGTaskSchedulerPermittedIdentifiers"
        guard let value = plist[key] else { return }
        guard let entries = value.array else {
            error(
                "taskIdentifiers.type", key, "must be an array of task identifiers, not \(value.typeName)",
                "write <array><string>com.example.app.refresh</string></array>")
            return
        }
        var seen = Set<String>()
        for (i, entry) in entries.enumerated() {
            let path = "\(key)[\(i)]"
            guard let id = entry.string else {
                error("taskIdentifiers.type", path, "must be a string, not \(entry.typeName)", nil)
                continue
            }
            if id.isEmpty || id.contains(where: { $0.isWhitespace }) {
                error(
                    "taskIdentifiers.identifier", path, "\"\(id)\" is not a task identifier (empty, or with spaces)",
                    "use a reverse-DNS name such as com.example.app.refresh")
            } else if !seen.insert(id).inserted {
                warning("taskIdentifiers.duplicate", path, "\"\(id)\" is listed twice", "list each identifier once")
            } else if !id.contains(".") {
                warning(
                    "taskIdentifiers.reverseDNS", path, "\"\(id)\" is not a reverse-DNS name",
                    "Apple recommends names such as com.example.app.\(id)")
            }
        }
        let modes = plist["UIBackgroundModes"]?.array?.compactMap(\.string) ?? []
        if !entries.isEmpty && !modes.contains("fetch") && !modes.contains("processing") {
            warning(
                "taskIdentifiers.backgroundModes", key,
                "lists task identifiers, but UIBackgroundModes has neither fetch nor processing",
                "add fetch (for app refresh tasks) and/or processing (for processing tasks) to UIBackgroundModes")
        }
    }

    /// The most text one placeholder expansion may produce (a bound on values that expand each other).
    static let maximumExpansion = 64 << 10

    /// Expands `$(NAME)` placeholders in one pass: replaced text is never scanned again, a
    /// definition that names another placeholder is expanded recursively with the names being
    /// expanded in `active` (a cycle is left as written and reported), and the output is bounded.
    func expand(
        _ text: String, active: [String], missing: inout [String], cycles: inout [String], truncated: inout Bool
    ) -> String {
        var out = ""
        var rest = Substring(text)
        while let open = rest.range(of: "$("), let close = rest[open.upperBound...].firstIndex(of: ")") {
            out += rest[..<open.lowerBound]
            let name = String(rest[open.upperBound..<close])
            rest = rest[rest.index(after: close)...]
            if active.contains(name) {
                if !cycles.contains(name) { cycles.append(name) }
                out += "$(\(name))"
            } else if let definition = defines[name] {
                out += expand(
                    definition, active: active + [name], missing: &missing, cycles: &cycles, truncated: &truncated)
            } else {
                // Checked as its name, which keeps a required value non-empty (a warning says it is undefined).
                if !missing.contains(name) { missing.append(name) }
                out += name
            }
            if truncated || out.utf8.count > Self.maximumExpansion {
                truncated = true
                return String(decoding: out.utf8.prefix(Self.maximumExpansion), as: UTF8.self)
            }
        }
        return out + rest
    }

    private func checkSize(
        _ path: String, _ value: PlistValue?, required: Bool,
        _ error: (String, String, String, String?) -> Void
    ) {
        guard let value else {
            if required {
                error(
                    "size.required", path,
                    "is missing; the app is stopped at launch (\"The app must contain a number with a key named '\(path.split(separator: ".").last!)'\")",
                    "add it as an integer number of bytes (0 is allowed)")
            }
            return
        }
        switch value {
        case .integer(let n) where n < 0:
            error("size.negative", path, "is negative (\(n))", "give a number of bytes, 0 or more")
        case .integer, .unsignedInteger:
            break  // 64-bit sizes are fine: the daemon reads unsigned long long.
        case .string(let s) where UInt64(s) != nil:
            error("size.type", path, "is the string \"\(s)\", not an integer", "write <integer>\(s)</integer>")
        default:
            error(
                "size.type", path, "must be an integer number of bytes, not \(value.typeName)",
                "write <integer>BYTES</integer>")
        }
    }

    /// A DNS name (letters, digits, hyphens; labels of 1–63; total ≤ 253) with an optional `*.` prefix.
    public static func isDomainPattern(_ s: String) -> Bool {
        var name = Substring(s)
        if name.hasPrefix("*.") { name = name.dropFirst(2) }
        guard !name.isEmpty, name.count <= 253 else { return false }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 1 else { return false }
        return labels.allSatisfy { label in
            (1...63).contains(label.count) && label.first != "-" && label.last != "-"
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        }
    }
}
