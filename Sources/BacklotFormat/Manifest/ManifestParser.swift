import BacklotBasics
import BacklotJSON

extension PackManifest {
    /// What reading a manifest found: the manifest when there is no error, and every diagnostic.
    public struct ParseResult: Sendable {
        public let manifest: PackManifest?
        public let diagnostics: [ManifestDiagnostic]

        public var errors: [ManifestDiagnostic] { diagnostics.filter { $0.severity == .error } }
        public var warnings: [ManifestDiagnostic] { diagnostics.filter { $0.severity == .warning } }
    }

    /// Reads a manifest and reports every rule it breaks (it does not stop at the first).
    ///
    /// Comments (`//`, `/* */`) and trailing commas are accepted, as in Apple's template.
    /// - Throws: ``BacklotError/Code/invalidJSON`` when the text is not JSON (with line and column).
    public static func parse(_ bytes: [UInt8], source: String) throws -> ParseResult {
        parse(try JSONReader(source: source).read(bytes))
    }

    /// Checks JSON already read (``parse(_:source:)`` without reading it again).
    static func parse(_ read: JSONReader.Result) -> ParseResult {
        var checker = ManifestChecker()
        for w in read.warnings {
            checker.warn("json.trailingComma", "(text)", w.position, w.message)
        }
        let manifest = checker.check(root: read.root)
        return ParseResult(manifest: checker.hasErrors ? nil : manifest, diagnostics: checker.diagnostics)
    }

    /// Reads a manifest file.
    ///
    /// - Returns: the manifest and its warnings.
    /// - Throws: ``BacklotError/Code/invalidManifest`` listing every error (line, column, JSON path,
    ///   rule and fix); ``BacklotError/Code/invalidJSON``; ``BacklotError/Code/io``.
    ///
    /// ```swift
    /// let (manifest, warnings) = try PackManifest.load(path: "Manifest.json")
    /// ```
    public static func load(path: String) throws -> (manifest: PackManifest, warnings: [ManifestDiagnostic]) {
        let bytes = try FileDescriptor.readWholeFile(
            path, atMost: 16 << 20, what: "the manifest", code: .invalidManifest)
        return try load(bytes, source: path)
    }

    /// Reads manifest bytes; see ``load(path:)``.
    public static func load(
        _ bytes: [UInt8], source: String
    ) throws -> (manifest: PackManifest, warnings: [ManifestDiagnostic]) {
        try load(try JSONReader(source: source).read(bytes), source: source)
    }

    /// ``load(_:source:)`` of JSON already read.
    static func load(
        _ read: JSONReader.Result, source: String
    ) throws -> (manifest: PackManifest, warnings: [ManifestDiagnostic]) {
        let result = parse(read)
        guard let manifest = result.manifest else {
            let errors = result.errors
            let list = errors.map { "  \(source):\($0)" }.joined(separator: "\n")
            let noun = errors.count == 1 ? "error" : "errors"
            throw BacklotError(
                .invalidManifest, "the manifest has \(errors.count) \(noun):\n\(list)", context: source,
                hint: errors.count == 1 ? nil : "fix them in order; each line names the JSON path and the rule")
        }
        return (manifest, result.warnings)
    }
}

/// Walks a manifest's JSON and records every broken rule.
struct ManifestChecker {
    private(set) var diagnostics: [ManifestDiagnostic] = []
    var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }

    static let topLevelKeys = [
        "assetPackID", "downloadPolicy", "fileSelectors", "platforms", "userInfo", "sourceRoot", "language",
        "variants",
    ]
    static let selectorKeys = [
        "file", "directory", "filePattern", "fileExclusion", "fileSource", "fileDestination",
        "directorySource", "directoryDestination",
    ]

    mutating func fail(_ rule: String, _ path: String, _ position: JSONPosition, _ message: String, fix: String? = nil)
    {
        diagnostics.append(
            ManifestDiagnostic(
                severity: .error, rule: rule, jsonPath: path, position: position, message: message, fix: fix))
    }

    mutating func warn(_ rule: String, _ path: String, _ position: JSONPosition, _ message: String, fix: String? = nil)
    {
        diagnostics.append(
            ManifestDiagnostic(
                severity: .warning, rule: rule, jsonPath: path, position: position, message: message, fix: fix))
    }

    mutating func check(root: JSONNode) -> PackManifest? {
        guard let members = root.objectMembers else {
            fail(
                "root.object", "(root)", root.position, "a manifest is a JSON object, not \(root.typeName)",
                fix: "start from `backlot template`")
            return nil
        }
        if root["assetPacks"] != nil {
            fail(
                "root.onePack", "assetPacks", root.position,
                "this looks like a download manifest or a multi-pack file; a pack manifest describes exactly one pack",
                fix: "write one manifest per pack, each with its own top-level \"assetPackID\"")
            return nil
        }
        for m in members where !Self.topLevelKeys.contains(m.key) {
            if m.key == "toolsVersion" {
                warn(
                    "key.ignored", m.key, m.keyPosition,
                    "\"toolsVersion\" is written by ba-package inside archives; ignored here",
                    fix: "remove it")
            } else if let suggestion = Self.closest(to: m.key, in: Self.topLevelKeys) {
                fail(
                    "key.unknown", m.key, m.keyPosition, "unknown key \"\(m.key)\" (key names are case-sensitive)",
                    fix: "did you mean \"\(suggestion)\"?")
            } else {
                fail(
                    "key.unknown", m.key, m.keyPosition, "unknown key \"\(m.key)\"",
                    fix:
                        "the keys are \(Self.topLevelKeys.joined(separator: ", ")); put your own data under \"userInfo\""
                )
            }
        }

        let id = checkPackID(root)
        let policy = checkPolicy(root)
        let selectors = checkSelectors(root)
        let platforms = checkPlatforms(root)
        let sourceRoot = checkSourceRoot(root)
        let language = checkLanguage(root)
        let userInfo = root["userInfo"]
        let (variants, defaultTextureFormat) = checkVariants(root)

        guard let id, let policy, let selectors, let platforms, !hasErrors else { return nil }
        var manifest = PackManifest(
            assetPackID: id, downloadPolicy: policy, fileSelectors: selectors, platforms: platforms,
            userInfo: userInfo, sourceRoot: sourceRoot, language: language)
        manifest.variants = variants
        manifest.defaultTextureFormat = defaultTextureFormat
        return manifest
    }

    // MARK: variants

    /// `"variants": {"textureFormat": {"default": "etc2", "astc": [selectors], "etc2": [selectors]},
    /// "deviceTier": {"high": [selectors]}}`: per dimension, a value's selectors (or only the
    /// default, for Play's `#tcf_` folders selected by `fileSelectors`).
    mutating func checkVariants(_ root: JSONNode) -> ([VariantSelectors], String?) {
        guard let node = root["variants"] else { return ([], nil) }
        guard let dimensions = node.objectMembers else {
            fail(
                "variants.type", "variants", node.position, "must be an object of dimensions, not \(node.typeName)",
                fix:
                    "write \"variants\": {\"textureFormat\": {\"default\": \"etc2\", \"astc\": [{\"directory\": \"Textures/ASTC\"}]}}"
            )
            return ([], nil)
        }
        var result: [VariantSelectors] = []
        var defaultFormat: String?
        for member in dimensions {
            let path = "variants.\(member.key)"
            guard let dimension = VariantDimension(rawValue: member.key) else {
                fail(
                    "variants.dimension", path, member.keyPosition, "unknown dimension \"\(member.key)\"",
                    fix: Self.closest(to: member.key, in: VariantDimension.allCases.map(\.rawValue)).map {
                        "did you mean \"\($0)\"?"
                    }
                        ?? "the dimensions are textureFormat and deviceTier (languages are packs of their own: \"language\")"
                )
                continue
            }
            guard let values = member.value.objectMembers else {
                fail(
                    "variants.values", path, member.value.position,
                    "must be an object of values and their selectors, not \(member.value.typeName)")
                continue
            }
            for value in values {
                let valuePath = "\(path).\(value.key)"
                if value.key == "default" {
                    guard dimension == .textureFormat else {
                        fail(
                            "variants.default", valuePath, value.keyPosition,
                            "device tiers have no default: a device gets the highest tier not above its own, else the lowest",
                            fix: "remove it")
                        continue
                    }
                    guard let text = value.value.stringValue, TextureFormat.preferenceOrder.contains(text) else {
                        fail(
                            "variants.default", valuePath, value.value.position, "must name a texture format",
                            fix:
                                "one of \(TextureFormat.preferenceOrder.joined(separator: ", ")); etc2 is what most devices read"
                        )
                        continue
                    }
                    defaultFormat = text
                    continue
                }
                let normalized: String? =
                    switch dimension {
                    case .textureFormat: TextureFormat.preferenceOrder.contains(value.key) ? value.key : nil
                    case .deviceTier: DeviceTier.value(of: value.key).map(String.init)
                    }
                guard let normalized else {
                    fail(
                        "variants.value", valuePath, value.keyPosition,
                        dimension == .textureFormat
                            ? "\"\(value.key)\" is not a texture format Backlot knows"
                            : "\"\(value.key)\" is not a device tier",
                        fix: dimension == .textureFormat
                            ? "use one of \(TextureFormat.preferenceOrder.joined(separator: ", "))"
                            : "use low, medium, high or a digit 0 to 9")
                    continue
                }
                guard let list = value.value.arrayElements, !list.isEmpty else {
                    fail(
                        "variants.selectors", valuePath, value.value.position,
                        "must be a non-empty array of selectors, as fileSelectors is",
                        fix: "write [{\"directory\": \"Textures/\(value.key)\"}]")
                    continue
                }
                if result.contains(where: { $0.dimension == dimension && $0.value == normalized }) {
                    fail(
                        "variants.duplicate", valuePath, value.keyPosition,
                        "names the same \(dimension.rawValue) as another key", fix: "merge the two lists")
                    continue
                }
                var selectors: [FileSelector] = []
                for (i, element) in list.enumerated() {
                    if let selector = checkSelector(element, path: "\(valuePath)[\(i)]") { selectors.append(selector) }
                }
                result.append(VariantSelectors(dimension: dimension, value: normalized, fileSelectors: selectors))
            }
        }
        return (result, defaultFormat)
    }

    // MARK: assetPackID

    mutating func checkPackID(_ root: JSONNode) -> PackID? {
        guard let node = root["assetPackID"] else {
            fail(
                "assetPackID.required", "assetPackID", root.position, "the manifest has no \"assetPackID\"",
                fix: "add \"assetPackID\": \"YourPackID\"")
            return nil
        }
        guard let text = node.stringValue else {
            fail("assetPackID.type", "assetPackID", node.position, "must be a string, not \(node.typeName)")
            return nil
        }
        if let problem = PackID.problem(with: text) {
            fail("assetPackID.rule", "assetPackID", node.position, problem.message, fix: problem.hint)
            return nil
        }
        let id = try! PackID(text)
        if let warning = id.appStoreConnectWarning {
            warn("assetPackID.appStoreConnect", "assetPackID", node.position, warning)
        }
        return id
    }

    // MARK: downloadPolicy

    mutating func checkPolicy(_ root: JSONNode) -> DownloadPolicy? {
        let path = "downloadPolicy"
        guard let node = root[path] else {
            fail(
                "downloadPolicy.required", path, root.position, "the manifest has no \"downloadPolicy\"",
                fix: "add \"downloadPolicy\": {\"onDemand\": {}} (or essential, or prefetch)")
            return nil
        }
        guard let members = node.objectMembers else {
            fail(
                "downloadPolicy.type", path, node.position, "must be an object, not \(node.typeName)",
                fix:
                    "write {\"onDemand\": {}} or {\"essential\": {\"installationEventTypes\": [\"firstInstallation\"]}}"
            )
            return nil
        }
        let known = ["essential", "prefetch", "onDemand"]
        for m in members where !known.contains(m.key) {
            let suggestion = Self.closest(to: m.key, in: known).map { "did you mean \"\($0)\"?" }
            fail(
                "downloadPolicy.unknownKey", "\(path).\(m.key)", m.keyPosition, "unknown download policy \"\(m.key)\"",
                fix: suggestion ?? "use one of essential, prefetch, onDemand")
        }
        let given = members.filter { known.contains($0.key) }
        guard given.count == 1 else {
            fail(
                "downloadPolicy.exactlyOne", path, node.position,
                "give exactly one of essential, prefetch, onDemand (found \(given.count))",
                fix: given.count == 0
                    ? "add one of them" : "keep one of \(given.map { $0.key }.joined(separator: ", "))")
            return nil
        }
        let m = given[0]
        let kindPath = "\(path).\(m.key)"
        if m.key == "onDemand" {
            guard let inner = m.value.objectMembers, inner.isEmpty else {
                fail(
                    "downloadPolicy.onDemandEmpty", kindPath, m.value.position,
                    "the value of \"onDemand\" must be an empty object, not \(m.value.objectMembers == nil ? m.value.typeName : "an object with keys")",
                    fix: "write \"onDemand\": {}")
                return nil
            }
            return .onDemand
        }
        guard let inner = m.value.objectMembers else {
            fail(
                "downloadPolicy.type", kindPath, m.value.position, "must be an object, not \(m.value.typeName)",
                fix: "write \"\(m.key)\": {\"installationEventTypes\": [\"firstInstallation\"]}")
            return nil
        }
        for extra in inner where extra.key != "installationEventTypes" {
            let suggestion = Self.closest(to: extra.key, in: ["installationEventTypes"]).map {
                "did you mean \"\($0)\"?"
            }
            fail(
                "downloadPolicy.unknownKey", "\(kindPath).\(extra.key)", extra.keyPosition,
                "unknown key \"\(extra.key)\"",
                fix: suggestion ?? "only \"installationEventTypes\" belongs here")
        }
        let eventsPath = "\(kindPath).installationEventTypes"
        guard let eventsNode = m.value["installationEventTypes"] else {
            fail(
                "downloadPolicy.eventTypesRequired", eventsPath, m.value.position,
                "\(m.key) packs need \"installationEventTypes\"",
                fix: "add \"installationEventTypes\": [\"firstInstallation\", \"subsequentUpdate\"] (or use onDemand)")
            return nil
        }
        guard let list = eventsNode.arrayElements else {
            fail(
                "downloadPolicy.eventTypesType", eventsPath, eventsNode.position,
                "must be an array of strings, not \(eventsNode.typeName)")
            return nil
        }
        guard !list.isEmpty else {
            fail(
                "downloadPolicy.eventTypesEmpty", eventsPath, eventsNode.position,
                "must list at least one installation event",
                fix: "list firstInstallation, subsequentUpdate or both; a pack fetched only when asked is onDemand")
            return nil
        }
        var events: [InstallationEventType] = []
        for (i, e) in list.enumerated() {
            guard let text = e.stringValue, let event = InstallationEventType(rawValue: text) else {
                fail(
                    "downloadPolicy.eventTypeUnknown", "\(eventsPath)[\(i)]", e.position,
                    "\(e.stringValue.map { "\"\($0)\"" } ?? e.typeName) is not an installation event type",
                    fix: "use \"firstInstallation\" or \"subsequentUpdate\"")
                continue
            }
            if events.contains(event) {
                warn(
                    "downloadPolicy.eventTypeDuplicate", "\(eventsPath)[\(i)]", e.position,
                    "\"\(text)\" is listed twice", fix: "remove one")
            } else {
                events.append(event)
            }
        }
        return m.key == "essential"
            ? .essential(installationEventTypes: events.sorted())
            : .prefetch(installationEventTypes: events.sorted())
    }

    // MARK: fileSelectors

    mutating func checkSelectors(_ root: JSONNode) -> [FileSelector]? {
        let path = "fileSelectors"
        guard let node = root[path] else {
            fail(
                "fileSelectors.required", path, root.position, "the manifest has no \"fileSelectors\"",
                fix: "add \"fileSelectors\": [{\"directory\": \"YourFolder\"}]")
            return nil
        }
        guard let list = node.arrayElements else {
            fail(
                "fileSelectors.type", path, node.position, "must be an array of selector objects, not \(node.typeName)")
            return nil
        }
        guard !list.isEmpty else {
            fail(
                "fileSelectors.empty", path, node.position, "lists no selector, so the pack would be empty",
                fix: "add at least one selector such as {\"directory\": \"Assets\"}")
            return nil
        }
        var selectors: [FileSelector] = []
        for (i, element) in list.enumerated() {
            if let selector = checkSelector(element, path: "\(path)[\(i)]") { selectors.append(selector) }
        }
        if selectors.allSatisfy({ if case .fileExclusion = $0 { true } else { false } }), !selectors.isEmpty {
            fail(
                "fileSelectors.onlyExclusions", path, node.position,
                "has only fileExclusion selectors, so nothing is selected",
                fix: "add a file, directory or filePattern selector")
        }
        return selectors
    }

    mutating func checkSelector(_ node: JSONNode, path: String) -> FileSelector? {
        guard let members = node.objectMembers else {
            fail(
                "selector.type", path, node.position,
                "a selector is an object such as {\"file\": \"a.png\"}, not \(node.typeName)")
            return nil
        }
        for m in members where !Self.selectorKeys.contains(m.key) {
            let suggestion = Self.closest(to: m.key, in: Self.selectorKeys).map { "did you mean \"\($0)\"?" }
            fail(
                "selector.unknownKey", "\(path).\(m.key)", m.keyPosition, "unknown selector key \"\(m.key)\"",
                fix: suggestion
                    ?? "use file, directory, filePattern, fileExclusion, fileSource+fileDestination or directorySource+directoryDestination"
            )
        }
        let keys = Set(members.map(\.key)).intersection(Self.selectorKeys)
        let pairs: [(String, String)] = [
            ("fileSource", "fileDestination"), ("directorySource", "directoryDestination"),
        ]
        var kinds: [String] = []
        for k in ["file", "directory", "filePattern", "fileExclusion"] where keys.contains(k) { kinds.append(k) }
        for (a, b) in pairs where keys.contains(a) || keys.contains(b) {
            if keys.contains(a) != keys.contains(b) {
                let (have, missing) = keys.contains(a) ? (a, b) : (b, a)
                fail(
                    "selector.halfPair", path, node.position,
                    "\"\(have)\" needs \"\(missing)\" in the same selector (one or two keys should be present)",
                    fix: "add \"\(missing)\", or use a single-key selector")
                return nil
            }
            kinds.append("\(a) + \(b)")
        }
        if kinds.isEmpty {
            if members.allSatisfy({ !Self.selectorKeys.contains($0.key) }) && !members.isEmpty { return nil }
            fail(
                "selector.noKey", path, node.position,
                "a selector needs one key (or a source/destination pair); it has none",
                fix: "write {\"file\": \"path\"} or {\"directory\": \"path\"}")
            return nil
        }
        if kinds.count > 1 {
            fail(
                "selector.twoKinds", path, node.position,
                "one selector has \(kinds.count) kinds at once (\(kinds.joined(separator: ", ")))",
                fix: "split them into separate selectors")
            return nil
        }
        func value(_ key: String, allowRoot: Bool, isPattern: Bool = false) -> String? {
            let valuePath = "\(path).\(key)"
            let v = node[key]!
            guard let text = v.stringValue else {
                fail("path.type", valuePath, v.position, "must be a string, not \(v.typeName)")
                return nil
            }
            switch SelectorPath.normalize(text, allowRoot: allowRoot, isPattern: isPattern) {
            case .success(let normalized):
                if isPattern {
                    do { _ = try Glob(normalized) } catch let problem as SelectorPath.Problem {
                        fail(problem.rule, valuePath, v.position, problem.message, fix: problem.fix)
                        return nil
                    } catch { return nil }
                }
                return normalized
            case .failure(let problem):
                fail(problem.rule, valuePath, v.position, problem.message, fix: problem.fix)
                return nil
            }
        }
        switch kinds[0] {
        case "file": return value("file", allowRoot: false).map(FileSelector.file)
        case "directory": return value("directory", allowRoot: true).map(FileSelector.directory)
        case "filePattern": return value("filePattern", allowRoot: false, isPattern: true).map(FileSelector.filePattern)
        case "fileExclusion":
            return value("fileExclusion", allowRoot: false, isPattern: true).map(FileSelector.fileExclusion)
        case "fileSource + fileDestination":
            guard let s = value("fileSource", allowRoot: false), let d = value("fileDestination", allowRoot: false)
            else { return nil }
            return .fileMapping(source: s, destination: d)
        default:
            guard let s = value("directorySource", allowRoot: true),
                let d = value("directoryDestination", allowRoot: true)
            else { return nil }
            return .directoryMapping(source: s, destination: d)
        }
    }

    // MARK: platforms

    mutating func checkPlatforms(_ root: JSONNode) -> [Platform]? {
        let path = "platforms"
        guard let node = root[path] else {
            fail(
                "platforms.required", path, root.position, "the manifest has no \"platforms\"",
                fix: "add \"platforms\": [\"iOS\"] (iOS, macOS, tvOS, visionOS, linux)")
            return nil
        }
        guard let list = node.arrayElements else {
            fail("platforms.type", path, node.position, "must be an array of strings, not \(node.typeName)")
            return nil
        }
        guard !list.isEmpty else {
            fail(
                "platforms.empty", path, node.position, "lists no platform",
                fix: "list at least one of iOS, macOS, tvOS, visionOS, linux")
            return nil
        }
        var platforms: [Platform] = []
        for (i, e) in list.enumerated() {
            let p = "\(path)[\(i)]"
            guard let text = e.stringValue else {
                fail("platforms.type", p, e.position, "must be a string, not \(e.typeName)")
                continue
            }
            if let platform = Platform(rawValue: text) {
                if platforms.contains(platform) {
                    warn("platforms.duplicate", p, e.position, "\"\(text)\" is listed twice", fix: "remove one")
                } else {
                    platforms.append(platform)
                }
            } else if text == "iPadOS" {
                fail(
                    "platforms.unknown", p, e.position, "\"iPadOS\" is not a platform here",
                    fix: "use \"iOS\": it covers iPad")
            } else if let match = Platform.allCases.first(where: { $0.rawValue.lowercased() == text.lowercased() }) {
                fail(
                    "platforms.unknown", p, e.position, "\"\(text)\" is not a platform (names are case-sensitive)",
                    fix: "write \"\(match.rawValue)\"")
            } else {
                fail(
                    "platforms.unknown", p, e.position, "\"\(text)\" is not a platform",
                    fix: "use iOS, macOS, tvOS, visionOS or linux")
            }
        }
        return platforms
    }

    // MARK: sourceRoot, language

    mutating func checkSourceRoot(_ root: JSONNode) -> String? {
        guard let node = root["sourceRoot"] else { return nil }
        guard let text = node.stringValue else {
            fail("sourceRoot.type", "sourceRoot", node.position, "must be a string, not \(node.typeName)")
            return nil
        }
        if text.isEmpty {
            fail(
                "sourceRoot.empty", "sourceRoot", node.position, "must not be empty",
                fix: "write \".\" for the manifest's own folder, or remove the key")
            return nil
        }
        if text.contains("\\") {
            fail("path.backslash", "sourceRoot", node.position, "contains '\\'", fix: "separate folders with '/'")
            return nil
        }
        return text
    }

    mutating func checkLanguage(_ root: JSONNode) -> String? {
        guard let node = root["language"] else { return nil }
        guard let text = node.stringValue else {
            fail("language.type", "language", node.position, "must be a string, not \(node.typeName)")
            return nil
        }
        if text.isEmpty {
            warn(
                "language.empty", "language", node.position, "is empty and is ignored",
                fix: "remove it, or give a BCP-47 tag such as \"en-US\"")
            return nil
        }
        guard LanguageTag.isValid(text) else {
            fail(
                "language.bcp47", "language", node.position,
                "\"\(text)\" is not a BCP-47 language tag of the form language[-Script][-REGION]",
                fix: "write a tag such as \"en\", \"en-US\", \"zh-Hans\" or \"zh-Hans-CN\"")
            return nil
        }
        return text
    }

    // MARK: suggestions

    /// The known key closest to `key` (same letters ignoring case, or within two edits).
    static func closest(to key: String, in known: [String]) -> String? {
        Suggestion.closest(to: key, in: known)
    }
}
