import BacklotFormat

/// The named schemas of the OpenAPI document (`components.schemas`): exactly what the server
/// sends and accepts. Objects the server sends list every member it writes, all required, with
/// `additionalProperties: false`; a member the server may write as null says so.
public enum APISchemas {
    /// App and pack IDs (``PackID``): a letter or digit, then letters, digits, '.', '_' or '-', at most 255 characters.
    public static let idPattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$"
    public static let sha256Pattern = "^[0-9a-f]{64}$"
    public static let channels = Channel.allCases.map(\.rawValue)
    public static let largestInteger = Int64.max

    public static let time = JSONSchema.string(format: "date-time", description: "RFC 3339, UTC, whole seconds")
    public static let optionalTime = JSONSchema.nullableString(
        format: "date-time", description: "RFC 3339, UTC, whole seconds; null when not set")
    public static let id = JSONSchema.string(pattern: idPattern)
    public static let positive = JSONSchema.integer(minimum: 1, maximum: largestInteger)
    public static let count = JSONSchema.integer(minimum: 0, maximum: largestInteger)
    public static let channel = JSONSchema.string(enumeration: channels)
    public static let percent = JSONSchema.number(minimum: 0, maximum: 100)
    public static let role = JSONSchema.string(enumeration: Role.allCases.map(\.rawValue))

    /// Text others read (a token's label, a rejection's reason), as ``DisplayText/problem(in:)``
    /// allows it: no control character (Cc: U+0000–U+001F, U+007F–U+009F; newlines and tabs too)
    /// and no bidirectional control (U+200E, U+200F, U+202A–U+202E, U+2066–U+2069).
    /// A token's person as the server writes it.
    public static let person = JSONSchema.string(description: "The person (or service account) the token belongs to")

    /// Release notes, as ``ReleaseNotes`` reads them: lines of display text (newlines allowed, no
    /// other control or bidirectional character), at most ``API/Limits/longestNotes`` characters.
    public static let notes = JSONSchema.nullableString(
        pattern: #"^[^\u0000-\u0009\u000B-\u001F\u007F-\u009F\u200E\u200F\u202A-\u202E\u2066-\u2069]*$"#,
        maxLength: API.Limits.longestNotes, description: "Lines of text shown with the version and its release requests"
    )

    public static let displayTextPattern =
        #"^[^\u0000-\u001F\u007F-\u009F\u200E\u200F\u202A-\u202E\u2066-\u2069]*$"#

    /// A rollout's share, as the server reads it (``API/RolloutShare``): 0.01 to
    /// 100, any number of decimals, rounded down to the basis point.
    public static let rolloutShare = JSONSchema.number(
        minimum: API.Limits.lowestPercent, maximum: 100,
        description: "A percentage from 0.01 to 100; kept in basis points, rounded down (99.999 is 99.99)")

    /// The largest archive a version may declare: the quota of every app (``Repository/quotaBytes``,
    /// Apple's 200 GB; `backlot serve` does not change it, and a test checks the two agree).
    public static let largestArchive = Int64(API.Limits.quotaBytes)

    /// A version's declared size for an archive of `format`: at least its header, at most the quota.
    public static func archiveSize(_ format: ArchiveFormat) -> JSONSchema {
        let header = format == .pack ? PackHeader.size : AppleArchiveHeader.prefixLength
        return .integer(
            minimum: Int64(header), maximum: largestArchive,
            description:
                "The archive's exact size in bytes: at least its header (\(header) bytes), at most the app's quota")
    }

    /// A selector's file or folder (``SelectorPath``): not empty, relative (no leading '/'), no '\\'
    /// or NUL. The server checks the rest ('..', empty or '.' components, lengths) and says which rule.
    public static let selectorPath = JSONSchema.string(
        pattern: #"^[^/\\\u0000][^\\\u0000]*$"#,
        description:
            "Relative to the source root, '/'-separated; no '..', empty or '.' component (checked by the server)")
    /// A selector's glob (`filePattern`, `fileExclusion`): as a path, but '\\' escapes.
    public static let selectorGlob = JSONSchema.string(
        pattern: #"^[^/\u0000][^\u0000]*$"#,
        description: "A glob relative to the source root (*, **, ?, [..], \\ escapes; checked by the server)")
    public static let installationEvents = JSONSchema.array(
        .string(enumeration: InstallationEventType.allCases.map(\.rawValue)), minItems: 1)

    /// What a file selector may be: one kind each (docs/manifest.md).
    public static let selectors: [String: JSONSchema] = [
        "file": .object(["file": selectorPath], required: ["file"]),
        "directory": .object(["directory": selectorPath], required: ["directory"]),
        "filePattern": .object(["filePattern": selectorGlob], required: ["filePattern"]),
        "fileExclusion": .object(["fileExclusion": selectorGlob], required: ["fileExclusion"]),
        "fileMapping": .object(
            ["fileSource": selectorPath, "fileDestination": selectorPath], required: ["fileSource", "fileDestination"]),
        "directoryMapping": .object(
            ["directorySource": selectorPath, "directoryDestination": selectorPath],
            required: ["directorySource", "directoryDestination"]),
    ]

    /// An `.aar`'s pack manifest, the JSON given to ba-package (``PackManifest``, checked by
    /// `ManifestChecker`): what JSON Schema can say of it. Its `assetPackID` must also be the pack
    /// of the path, which no schema can say (docs/protocol.md §7).
    public static let manifest = JSONSchema.object(
        [
            "assetPackID": JSONSchema.string(
                pattern: idPattern, description: "The pack's ID: the pack of the request's path"),
            "downloadPolicy": JSONSchema(
                anyOf: [
                    .object(["onDemand": .object([:])], required: ["onDemand"]),
                    .object(
                        [
                            "essential": .object(
                                ["installationEventTypes": installationEvents], required: ["installationEventTypes"])
                        ],
                        required: ["essential"]),
                    .object(
                        [
                            "prefetch": .object(
                                ["installationEventTypes": installationEvents], required: ["installationEventTypes"])
                        ],
                        required: ["prefetch"]),
                ], description: "Exactly one of onDemand ({}), essential or prefetch (with installationEventTypes)"),
            "fileSelectors": .array(
                JSONSchema(anyOf: selectors.sorted { $0.key < $1.key }.map(\.value)), minItems: 1,
                contains: JSONSchema(
                    anyOf: selectors.filter { $0.key != "fileExclusion" }.sorted { $0.key < $1.key }.map(\.value)),
                description: "At least one selector that selects (not only fileExclusion)"),
            "platforms": .array(.string(enumeration: Platform.allCases.map(\.rawValue)), minItems: 1),
            "userInfo": .anyValue(description: "Your own data, kept as is"),
            "sourceRoot": .string(pattern: #"^[^\\]+$"#, description: "The folder selectors are relative to"),
            "language": .string(
                pattern: "^([A-Za-z]{2,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?)?$",
                description: "A BCP-47 tag language[-Script][-REGION], or empty (ignored)"),
            "toolsVersion": .anyValue(description: "Written by ba-package inside archives; ignored"),
        ], required: ["assetPackID", "downloadPolicy", "fileSelectors", "platforms"],
        description: "The pack manifest given to ba-package (docs/manifest.md)")

    /// Every schema of the document, by name: those of ``derivedTypes`` read from their types, and
    /// ``handWritten``.
    public static let all: [String: JSONSchema] = {
        do { return try schemas() } catch { preconditionFailure("the management API's schemas: \(error)") }
    }()

    /// ``all``, or the first type whose schema cannot be read (a test calls it, so that a type
    /// changed in a way no schema is read from fails there with its reason).
    public static func schemas() throws -> [String: JSONSchema] {
        let named = Dictionary(uniqueKeysWithValues: derivedTypes.map { (ObjectIdentifier($0.type), $0.name) })
        var schemas = handWritten
        for (name, type) in derivedTypes {
            guard schemas[name] == nil else { throw SchemaDerivationError(type: name, problem: "named twice") }
            schemas[name] = try JSONSchema.derived(from: type, named: named)
        }
        return schemas
    }

    /// The document's schemas read from the wire's types (``WireObject``), by name. A member of one
    /// of these types elsewhere is a `$ref` to it; other nested types are written inline.
    /// (Made on each call: a stored list of metatypes is not `Sendable`, and the document is made
    /// once per server.)
    public static var derivedTypes: [(name: String, type: any (WireObject & Encodable).Type)] {
        [
            ("Error", API.ErrorAnswer.self), ("App", API.App.self), ("AppList", API.AppList.self),
            ("AppCreate", API.AppCreate.self), ("AppChange", API.AppChange.self), ("Pack", API.Pack.self),
            ("PackList", API.PackList.self), ("PackCreate", API.PackCreate.self), ("PackCreated", API.PackCreated.self),
            ("Version", API.Version.self), ("Variants", API.Variants.self), ("VersionList", API.VersionList.self),
            ("Deleted", API.Deleted.self), ("TokenReference", API.TokenReference.self),
            ("ReleaseRequest", API.ReleaseRequest.self), ("ReleaseList", API.ReleaseList.self),
            ("ReleasePlan", API.ReleasePlan.self), ("Rejection", API.Rejection.self),
            ("ChannelPack", API.ChannelPack.self), ("Rollout", API.Rollout.self),
            ("ChannelState", API.ChannelState.self),
            ("RolloutChange", API.RolloutChange.self), ("RollbackRequest", API.RollbackRequest.self),
            ("RolledBack", API.RolledBack.self), ("WithdrawRequest", API.WithdrawRequest.self),
            ("Withdrawn", API.Withdrawn.self), ("Token", API.Token.self), ("TokenList", API.TokenList.self),
            ("TokenCreate", API.TokenCreate.self), ("IssuedToken", API.IssuedToken.self),
            ("AuditEntry", API.AuditEntry.self), ("AuditPage", API.AuditPage.self),
            ("DownloadRow", API.DownloadRow.self),
            ("Downloads", API.Downloads.self), ("HeldRelease", API.HeldRelease.self),
            ("InstallCounts", API.InstallCounts.self), ("DeviceReport", API.DeviceReport.self),
            ("ReportCounted", API.ReportCounted.self), ("AdoptionRow", API.AdoptionRow.self),
            ("Adoption", API.Adoption.self), ("PhasedRolloutRequest", API.PhasedRolloutRequest.self),
            ("PhasedRollout", API.PhasedRollout.self), ("SigningKey", API.SigningKey.self), ("Keys", API.Keys.self),
            ("WhoAmI", API.WhoAmI.self),
        ]
    }

    /// The schemas that say more than a type can: bodies with one of several shapes (`anyOf`), the
    /// two answers ``API/ReleaseOutcome`` gives besides a plan, and Apple's manifest.
    public static let handWritten: [String: JSONSchema] = [
        "VersionCreate": JSONSchema(
            anyOf: [
                .object(
                    [
                        "size": archiveSize(.pack),
                        "format": JSONSchema.string(enumeration: [ArchiveFormat.pack.rawValue]).orNull,
                        "manifest": .anyValue(description: "Not read for a pack"),
                        "archiveSHA256": .nullableString(pattern: sha256Pattern), "notes": notes,
                    ], required: ["size"], description: "A Backlot pack (format pack, absent or null)"),
                .object(
                    [
                        "size": archiveSize(.appleArchive),
                        "format": .string(enumeration: [ArchiveFormat.appleArchive.rawValue]),
                        "manifest": .ref("AssetPackManifest"),
                        "archiveSHA256": .nullableString(pattern: sha256Pattern), "notes": notes,
                    ], required: ["size", "format", "manifest"],
                    description: "An .aar from ba-package with its manifest, whose assetPackID is the pack of the path"),
            ],
            description: "With archiveSHA256, an existing version of that archive is answered instead (200)"),
        "AssetPackManifest": manifest,
        "ReleaseCreate": JSONSchema(
            anyOf: [
                .object(
                    [
                        "pack": id, "version": positive, "channel": .string(enumeration: [Channel.production.rawValue]),
                        "rollout": rolloutShare.orNull, "dryRun": .nullableBoolean,
                    ], required: ["pack", "version", "channel"],
                    description: "To production, optionally as a staged rollout to that share of devices"),
                .object(
                    [
                        "pack": id, "version": positive,
                        "channel": .string(enumeration: [Channel.internal.rawValue, Channel.external.rawValue]),
                        "rollout": .null, "dryRun": .nullableBoolean,
                    ], required: ["pack", "version", "channel"],
                    description: "To internal or external: staged rollouts are for production only"),
            ]),
        "Released": .object(["released": .boolean], required: ["released"]),
        "ReleaseRequested": .object(
            ["released": .boolean, "request": .ref("ReleaseRequest")], required: ["released", "request"]),
    ]
}
