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

    /// The version a channel offers every device (``API/Live``).
    static let live = JSONSchema.object(
        ["version": positive, "archiveSHA256": .nullableString(pattern: sha256Pattern)],
        required: ["version", "archiveSHA256"])
    /// The version being rolled out and its share (``API/Candidate``).
    static let candidate = JSONSchema.object(
        ["version": positive, "rolloutPercent": percent], required: ["version", "rolloutPercent"])

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

    public static let all: [String: JSONSchema] = [
        "Error": .object(
            [
                "error": .object(
                    ["code": .string(), "message": .string(), "context": .nullableString(), "hint": .nullableString()],
                    required: ["code", "message", "context", "hint"])
            ],
            required: ["error"],
            description:
                "Every error: a stable code, a message that does not repeat its context, the thing it is about, and what to do."
        ),
        "App": .object(
            [
                "id": id, "created": time, "fourEyes": .boolean, "quotaBytes": count,
                "secondReviewerAbove": .number(minimum: 0, maximum: 100, nullable: true),
            ],
            required: ["id", "created", "fourEyes", "quotaBytes", "secondReviewerAbove"]),
        "AppList": .object(["apps": .array(.ref("App"))], required: ["apps"]),
        "AppCreate": .object(["id": id, "fourEyes": .nullableBoolean], required: ["id"]),
        "AppChange": .object(
            [
                "fourEyes": .nullableBoolean,
                "secondReviewerAbove": JSONSchema(
                    anyOf: [
                        .number(minimum: 0, maximum: 0), .number(minimum: API.Limits.lowestPercent, maximum: 100),
                    ],
                    description:
                        "A production rollout step above this share needs another person than the release's approver; 0 turns the rule off"
                ).orNull,
            ], required: [], description: "What to change; an absent member is left as it is"),
        "Pack": .object(
            [
                "id": id, "created": time, "versions": count,
                "latest": .integer(minimum: 1, maximum: largestInteger, nullable: true),
            ],
            required: ["id", "created", "versions", "latest"]),
        "PackList": .object(["packs": .array(.ref("Pack"))], required: ["packs"]),
        "PackCreate": .object(["id": id], required: ["id"]),
        "PackCreated": .object(["app": id, "id": id], required: ["app", "id"]),
        "Version": .object(
            [
                "app": id, "pack": id, "version": positive,
                "state": .string(enumeration: ["AWAITING_UPLOAD", "PROCESSING", "COMPLETE", "FAILED"]),
                "reason": .nullableString(), "size": count, "received": count,
                "archiveSHA256": .nullableString(pattern: sha256Pattern),
                "installSize": .integer(minimum: 0, maximum: largestInteger, nullable: true),
                "format": .string(enumeration: ArchiveFormat.allCases.map(\.rawValue)), "notes": .nullableString(),
                "variants": JSONSchema.ref("Variants").orNull,
            ],
            required: [
                "app", "pack", "version", "state", "reason", "size", "received", "archiveSHA256", "installSize",
                "format", "notes", "variants",
            ]),
        "Variants": .object(
            [
                "textureFormats": .array(.string(enumeration: TextureFormat.preferenceOrder)),
                "defaultTextureFormat": JSONSchema.string(enumeration: TextureFormat.preferenceOrder).orNull,
                "deviceTiers": .array(
                    .integer(minimum: Int64(DeviceTier.range.lowerBound), maximum: Int64(DeviceTier.range.upperBound))),
            ],
            required: ["textureFormats", "defaultTextureFormat", "deviceTiers"]),
        "VersionList": .object(["versions": .array(.ref("Version"))], required: ["versions"]),
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
        "Deleted": .object(["deleted": .boolean], required: ["deleted"]),
        "TokenReference": .object(
            ["id": positive, "label": .string(), "person": person], required: ["id", "label", "person"]),
        "ReleaseRequest": .object(
            [
                "id": positive, "app": id, "channel": channel, "pack": id, "version": positive,
                "rolloutPercent": .number(minimum: 0, maximum: 100, nullable: true),
                "status": .string(enumeration: API.releaseStatuses), "requested": time,
                "requestedBy": JSONSchema.ref("TokenReference").orNull,
                "decided": optionalTime, "decidedBy": JSONSchema.ref("TokenReference").orNull,
                "reason": .nullableString(), "notes": .nullableString(),
            ],
            required: [
                "id", "app", "channel", "pack", "version", "rolloutPercent", "status", "requested", "requestedBy",
                "decided", "decidedBy", "reason", "notes",
            ]),
        "ReleaseList": .object(["releases": .array(.ref("ReleaseRequest"))], required: ["releases"]),
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
        "ReleasePlan": .object(
            [
                "dryRun": .boolean, "needsApproval": .boolean,
                "change": .object(
                    [
                        "channel": channel, "pack": id,
                        "from": .object(
                            [
                                "version": .integer(minimum: 1, maximum: largestInteger, nullable: true),
                                "rolloutPercent": .number(minimum: 0, maximum: 100, nullable: true),
                            ],
                            required: ["version", "rolloutPercent"]),
                        "to": .object(
                            ["version": positive, "rolloutPercent": .number(minimum: 0, maximum: 100, nullable: true)],
                            required: ["version", "rolloutPercent"]),
                        "catalogVersion": .unsigned(maximum: UInt64(Int64.max)),
                    ], required: ["channel", "pack", "from", "to", "catalogVersion"]),
            ], required: ["dryRun", "needsApproval", "change"]),
        "Rejection": .object(
            [
                "reason": .string(
                    pattern: displayTextPattern, maxLength: API.Limits.longestReason,
                    description: "One line of text: no control or bidirectional characters")
            ], required: ["reason"]),
        "ChannelPack": .object(
            [
                "pack": id,
                "live": live.orNull, "candidate": candidate.orNull,
            ], required: ["pack", "live", "candidate"]),
        "Rollout": .object(
            [
                "channel": channel, "pack": id,
                "live": live.orNull, "candidate": candidate.orNull,
            ], required: ["channel", "pack", "live", "candidate"]),
        "ChannelState": .object(
            [
                "app": id, "channel": channel, "catalogVersion": .unsigned(maximum: UInt64(Int64.max), nullable: true),
                "expires": optionalTime,
                "signingKey": .string(pattern: sha256Pattern), "packs": .array(.ref("ChannelPack")),
            ], required: ["app", "channel", "catalogVersion", "expires", "signingKey", "packs"]),
        "RolloutChange": .object(
            [
                "percent": JSONSchema(
                    anyOf: [.number(minimum: 0, maximum: 0), .number(minimum: API.Limits.lowestPercent, maximum: 100)],
                    description:
                        "0 halts the rollout, 100 promotes the candidate; otherwise from 0.01, rounded down to the basis point (99.999 is 99.99)"
                )
            ],
            required: ["percent"]),
        "RollbackRequest": .object(
            ["channel": channel, "version": .integer(minimum: 1, maximum: largestInteger, nullable: true)],
            required: ["channel"]),
        "RolledBack": .object(
            ["channel": channel, "pack": id, "version": positive], required: ["channel", "pack", "version"]),
        "WithdrawRequest": .object(["channel": channel], required: ["channel"]),
        "Withdrawn": .object(["withdrawn": .boolean], required: ["withdrawn"]),
        "Token": .object(
            [
                "id": positive, "label": .string(), "role": role, "person": person, "created": time,
                "lastUsed": optionalTime, "expires": optionalTime, "revoked": optionalTime,
            ], required: ["id", "label", "role", "person", "created", "lastUsed", "expires", "revoked"]),
        "TokenList": .object(["tokens": .array(.ref("Token"))], required: ["tokens"]),
        "TokenCreate": .object(
            [
                "role": role,
                "person": JSONSchema.nullableString(
                    pattern: displayTextPattern, minLength: 1, maxLength: API.Limits.longestTokenLabel,
                    description:
                        "Who it belongs to (a person or a service account); null or absent: the creator's person"),
                "label": .nullableString(
                    pattern: displayTextPattern, maxLength: API.Limits.longestTokenLabel,
                    description: "One line of text: no control or bidirectional characters; null or absent is \"\""),
                "expiresInSeconds": .integer(
                    minimum: API.Limits.shortestTokenLifetime, maximum: API.Limits.longestTokenLifetime, nullable: true),
            ], required: ["role"]),
        "IssuedToken": .object(
            [
                "id": positive, "token": .string(pattern: "^blt_[0-9a-f]{64}$"), "role": role, "label": .string(),
                "person": person, "created": time, "expires": optionalTime,
            ], required: ["id", "token", "role", "label", "person", "created", "expires"]),
        "AuditEntry": .object(
            [
                "id": positive, "time": time,
                "actor": .object(
                    [
                        "tokenId": .integer(minimum: 1, maximum: largestInteger, nullable: true), "label": .string(),
                        "role": .string(enumeration: Role.allCases.map(\.rawValue) + ["system"]),
                        "person": .nullableString(),
                    ], required: ["tokenId", "label", "role", "person"]),
                "app": .nullableString(pattern: idPattern), "pack": .nullableString(pattern: idPattern),
                "version": .integer(minimum: 1, maximum: largestInteger, nullable: true),
                "action": .string(enumeration: API.auditActions),
                "details": JSONSchema(
                    type: ["object"], description: "What changed: string values (channel, percent, from, to, reason, …)"
                ),
            ], required: ["id", "time", "actor", "app", "pack", "version", "action", "details"]),
        "AuditPage": .object(
            [
                "entries": .array(.ref("AuditEntry")),
                "next": .integer(minimum: 1, maximum: largestInteger, nullable: true),
            ], required: ["entries", "next"]),
        "DownloadRow": .object(
            [
                "date": .string(pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"), "pack": .nullableString(pattern: idPattern),
                "version": .integer(minimum: 1, maximum: largestInteger, nullable: true),
                "kind": .string(enumeration: API.downloadKinds), "requests": count,
                "bytes": count,
            ], required: ["date", "pack", "version", "kind", "requests", "bytes"]),
        "Downloads": .object(
            [
                "app": id, "from": .string(pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"),
                "to": .string(pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"), "rows": .array(.ref("DownloadRow")),
            ], required: ["app", "from", "to", "rows"]),
        "HeldRelease": .object(["pack": id, "version": positive], required: ["pack", "version"]),
        "InstallCounts": .object(
            [
                "pack": id, "version": positive,
                "started": .integer(minimum: 0, maximum: Int64(API.Limits.installsPerReport)),
                "finished": .integer(minimum: 0, maximum: Int64(API.Limits.installsPerReport)),
                "failed": .integer(minimum: 0, maximum: Int64(API.Limits.installsPerReport)),
            ], required: ["pack", "version", "started", "finished", "failed"]),
        "DeviceReport": .object(
            [
                "channel": channel,
                "held": JSONSchema.array(
                    .ref("HeldRelease"),
                    description:
                        "What the device holds now (at most \(API.Limits.reportEntries)); absent when unchanged today"
                ).orNull,
                "earlierToday": JSONSchema.array(
                    .ref("HeldRelease"),
                    description: "What its earlier report of the same UTC day said it held; absent on the day's first"
                ).orNull,
                "installs": JSONSchema.array(
                    .ref("InstallCounts"), description: "At most \(API.Limits.reportEntries) releases"
                ).orNull,
            ], required: ["channel"]),
        "ReportCounted": .object(["counted": count], required: ["counted"]),
        "AdoptionRow": .object(
            [
                "date": .string(pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"), "channel": channel,
                "pack": .nullableString(pattern: idPattern),
                "version": .integer(minimum: 1, maximum: largestInteger, nullable: true),
                "devices": .integer(minimum: 0, maximum: largestInteger, nullable: true),
                "started": .integer(minimum: 0, maximum: largestInteger, nullable: true),
                "finished": .integer(minimum: 0, maximum: largestInteger, nullable: true),
                "failed": .integer(minimum: 0, maximum: largestInteger, nullable: true),
            ], required: ["date", "channel", "pack", "version", "devices", "started", "finished", "failed"]),
        "Adoption": .object(
            [
                "app": id, "from": .string(pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"),
                "to": .string(pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"), "threshold": positive,
                "rows": .array(.ref("AdoptionRow")),
            ], required: ["app", "from", "to", "threshold", "rows"]),
        "PhasedRolloutRequest": .object(
            [
                "steps": .array(
                    rolloutShare, minItems: 1, maxItems: API.Limits.phaseSteps,
                    description:
                        "The shares it steps through, taken in rising order (a share given twice once); 100 promotes the candidate"
                ),
                "stepSeconds": .integer(
                    minimum: Int64(API.Limits.shortestPhaseStep), maximum: Int64(API.Limits.longestPhaseStep)),
            ], required: ["steps", "stepSeconds"]),
        "PhasedRollout": .object(
            [
                "app": id, "pack": id, "version": positive, "steps": .array(percent), "stepSeconds": positive,
                "step": count, "stepSince": time, "state": .string(enumeration: API.phaseStates),
                "reason": .nullableString(), "setBy": .nullableString(),
            ],
            required: [
                "app", "pack", "version", "steps", "stepSeconds", "step", "stepSince", "state", "reason", "setBy",
            ]
        ),
        "SigningKey": .object(
            [
                "keyId": .string(pattern: sha256Pattern), "publicKey": .string(), "since": time,
                "retired": optionalTime,
            ], required: ["keyId", "publicKey", "since", "retired"]),
        "Keys": .object(
            [
                "current": .object(
                    ["keyId": .string(pattern: sha256Pattern), "publicKey": .string(), "since": time],
                    required: ["keyId", "publicKey", "since"]),
                "history": .array(.ref("SigningKey")),
                "catalogs": .array(
                    .object(
                        [
                            "app": id, "channel": channel, "version": .unsigned(maximum: UInt64(Int64.max)),
                            "expires": time,
                        ], required: ["app", "channel", "version", "expires"])),
            ], required: ["current", "history", "catalogs"]),
        "WhoAmI": .object(
            ["tokenId": positive, "label": .string(), "role": role, "person": person, "expires": optionalTime],
            required: ["tokenId", "label", "role", "person", "expires"]),
    ]
}
