import BacklotFormat
import BacklotRepository

/// The named schemas of the OpenAPI document (`components.schemas`): exactly what the server
/// sends and accepts. Objects the server sends list every member it writes, all required, with
/// `additionalProperties: false`; a member the server may write as null says so.
enum APISchemas {
    /// App and pack IDs (``PackID``): a letter or digit, then letters, digits, '.', '_' or '-', at most 255 characters.
    static let idPattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$"
    static let sha256Pattern = "^[0-9a-f]{64}$"
    static let channels = ["internal", "external", "production"]
    static let largestInteger = Int64.max

    static let time = JSONSchema.string(format: "date-time", description: "RFC 3339, UTC, whole seconds")
    static let optionalTime = JSONSchema.nullableString(
        format: "date-time", description: "RFC 3339, UTC, whole seconds; null when not set")
    static let id = JSONSchema.string(pattern: idPattern)
    static let positive = JSONSchema.integer(minimum: 1, maximum: largestInteger)
    static let count = JSONSchema.integer(minimum: 0, maximum: largestInteger)
    static let channel = JSONSchema.string(enumeration: channels)
    static let percent = JSONSchema.number(minimum: 0, maximum: 100)
    static let role = JSONSchema.string(enumeration: Role.allCases.map(\.rawValue))

    static let all: [String: JSONSchema] = [
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
            ["id": id, "created": time, "fourEyes": .boolean, "quotaBytes": count],
            required: ["id", "created", "fourEyes", "quotaBytes"]),
        "AppList": .object(["apps": .array(.ref("App"))], required: ["apps"]),
        "AppCreate": .object(["id": id, "fourEyes": .boolean], required: ["id"]),
        "AppChange": .object(["fourEyes": .boolean], required: ["fourEyes"]),
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
                "format": .string(enumeration: ArchiveFormat.allCases.map(\.rawValue)),
            ],
            required: [
                "app", "pack", "version", "state", "reason", "size", "received", "archiveSHA256", "installSize",
                "format",
            ]),
        "VersionList": .object(["versions": .array(.ref("Version"))], required: ["versions"]),
        "VersionCreate": .object(
            [
                "size": .integer(
                    minimum: Int64(min(PackHeader.size, AppleArchiveHeader.prefixLength)), maximum: largestInteger,
                    description: "The archive's exact size in bytes (at least a header; at most the app's quota)"),
                "format": .string(enumeration: ArchiveFormat.allCases.map(\.rawValue)),
                "manifest": .anyObject, "archiveSHA256": .string(pattern: sha256Pattern),
            ], required: ["size"]),
        "Deleted": .object(["deleted": .boolean], required: ["deleted"]),
        "TokenReference": .object(["id": positive, "label": .string()], required: ["id", "label"]),
        "ReleaseRequest": .object(
            [
                "id": positive, "app": id, "channel": channel, "pack": id, "version": positive,
                "rolloutPercent": .number(minimum: 0, maximum: 100, nullable: true),
                "status": .string(enumeration: ReleaseRequest.statuses), "requested": time,
                "requestedBy": JSONSchema.ref("TokenReference").orNull,
                "decided": optionalTime, "decidedBy": JSONSchema.ref("TokenReference").orNull,
                "reason": .nullableString(),
            ],
            required: [
                "id", "app", "channel", "pack", "version", "rolloutPercent", "status", "requested", "requestedBy",
                "decided", "decidedBy", "reason",
            ]),
        "ReleaseList": .object(["releases": .array(.ref("ReleaseRequest"))], required: ["releases"]),
        "ReleaseCreate": .object(
            [
                "pack": id, "version": positive, "channel": channel,
                "rollout": .number(minimum: 0.01, maximum: 100, nullable: true), "dryRun": .boolean,
            ], required: ["pack", "version", "channel"]),
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
        "Rejection": .object(["reason": .string()], required: ["reason"]),
        "ChannelPack": .object(
            [
                "pack": id,
                "live": JSONSchema.object(
                    ["version": positive, "archiveSHA256": .nullableString(pattern: sha256Pattern)],
                    required: ["version", "archiveSHA256"]
                ).orNull,
                "candidate": JSONSchema.object(
                    ["version": positive, "rolloutPercent": percent], required: ["version", "rolloutPercent"]
                ).orNull,
            ], required: ["pack", "live", "candidate"]),
        "Rollout": .object(
            [
                "channel": channel, "pack": id,
                "live": JSONSchema.object(
                    ["version": positive, "archiveSHA256": .nullableString(pattern: sha256Pattern)],
                    required: ["version", "archiveSHA256"]
                ).orNull,
                "candidate": JSONSchema.object(
                    ["version": positive, "rolloutPercent": percent], required: ["version", "rolloutPercent"]
                ).orNull,
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
                    anyOf: [.number(minimum: 0, maximum: 0), .number(minimum: 0.01, maximum: 100)],
                    description: "0 halts the rollout, 100 promotes the candidate; otherwise at least 0.01")
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
                "id": positive, "label": .string(), "role": role, "created": time, "lastUsed": optionalTime,
                "expires": optionalTime, "revoked": optionalTime,
            ], required: ["id", "label", "role", "created", "lastUsed", "expires", "revoked"]),
        "TokenList": .object(["tokens": .array(.ref("Token"))], required: ["tokens"]),
        "TokenCreate": .object(
            [
                "role": role, "label": .string(maxLength: Repository.longestTokenLabel),
                "expiresInSeconds": .integer(
                    minimum: Repository.shortestTokenLifetime, maximum: Repository.longestTokenLifetime, nullable: true),
            ], required: ["role"]),
        "IssuedToken": .object(
            [
                "id": positive, "token": .string(pattern: "^blt_[0-9a-f]{64}$"), "role": role, "label": .string(),
                "created": time, "expires": optionalTime,
            ], required: ["id", "token", "role", "label", "created", "expires"]),
        "TokenRevoked": .object(["id": positive, "revoked": .boolean], required: ["id", "revoked"]),
        "AuditEntry": .object(
            [
                "id": positive, "time": time,
                "actor": .object(
                    [
                        "tokenId": .integer(minimum: 1, maximum: largestInteger, nullable: true), "label": .string(),
                        "role": .string(enumeration: Role.allCases.map(\.rawValue) + ["system"]),
                    ], required: ["tokenId", "label", "role"]),
                "app": .nullableString(pattern: idPattern), "pack": .nullableString(pattern: idPattern),
                "version": .integer(minimum: 1, maximum: largestInteger, nullable: true),
                "action": .string(enumeration: Repository.auditActions),
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
                "kind": .string(enumeration: ["catalog", "pack", "appleManifest", "applePack"]), "requests": count,
                "bytes": count,
            ], required: ["date", "pack", "version", "kind", "requests", "bytes"]),
        "Downloads": .object(
            [
                "app": id, "from": .string(pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"),
                "to": .string(pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"), "rows": .array(.ref("DownloadRow")),
            ], required: ["app", "from", "to", "rows"]),
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
            ["tokenId": positive, "label": .string(), "role": role, "expires": optionalTime],
            required: ["tokenId", "label", "role", "expires"]),
    ]
}
