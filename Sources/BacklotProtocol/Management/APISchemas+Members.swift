import BacklotFormat

// What the OpenAPI document says of the wire types' members beyond their Swift types: patterns,
// ranges, enumerations and descriptions, by wire name (``WireObject``). The members themselves,
// which are required and which may be null are read from the types (``JSONSchema/derived(from:named:)``).

extension APISchemas {
    /// A UTC day, `YYYY-MM-DD`.
    public static let date = JSONSchema.string(pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
    static let sha256 = JSONSchema.string(pattern: sha256Pattern)

    /// A share that may also be 0 (which turns something off): 0, or 0.01 to 100.
    static func shareOrZero(_ description: String) -> JSONSchema {
        JSONSchema(
            anyOf: [.number(minimum: 0, maximum: 0), .number(minimum: API.Limits.lowestPercent, maximum: 100)],
            description: description)
    }
}

extension API.ErrorAnswer: WireObject {
    public static var objectDescription: String? {
        "Every error: a stable code, a message that does not repeat its context, the thing it is about, and what to do."
    }
}
extension API.ErrorAnswer.Detail: WireObject {}

extension API.App: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "id": APISchemas.id, "created": APISchemas.time, "quotaBytes": APISchemas.count,
            "secondReviewerAbove": APISchemas.percent,
        ]
    }
}
extension API.AppList: WireObject {}
extension API.AppCreate: WireObject {
    public static var memberSchemas: [String: JSONSchema] { ["id": APISchemas.id] }
}
extension API.AppChange: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "secondReviewerAbove": APISchemas.shareOrZero(
                "A production rollout step above this share needs another person than the release's approver; 0 turns the rule off"
            )
        ]
    }
    public static var objectDescription: String? { "What to change; an absent member is left as it is" }
}
extension API.Pack: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        ["id": APISchemas.id, "created": APISchemas.time, "versions": APISchemas.count, "latest": APISchemas.positive]
    }
}
extension API.PackList: WireObject {}
extension API.PackCreate: WireObject {
    public static var memberSchemas: [String: JSONSchema] { ["id": APISchemas.id] }
}
extension API.PackCreated: WireObject {
    public static var memberSchemas: [String: JSONSchema] { ["app": APISchemas.id, "id": APISchemas.id] }
}

extension API.Version: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "app": APISchemas.id, "pack": APISchemas.id, "version": APISchemas.positive, "size": APISchemas.count,
            "received": APISchemas.count, "archiveSHA256": APISchemas.sha256, "installSize": APISchemas.count,
        ]
    }
}
extension API.Variants: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "textureFormats": .array(.string(enumeration: TextureFormat.preferenceOrder)),
            "defaultTextureFormat": .string(enumeration: TextureFormat.preferenceOrder),
            "deviceTiers": .array(
                .integer(minimum: Int64(DeviceTier.range.lowerBound), maximum: Int64(DeviceTier.range.upperBound))),
        ]
    }
}
extension API.VersionList: WireObject {}
extension API.Deleted: WireObject {}

extension API.TokenReference: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        ["id": APISchemas.positive, "person": APISchemas.person]
    }
}
extension API.ReleaseRequest: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "id": APISchemas.positive, "app": APISchemas.id, "pack": APISchemas.id, "version": APISchemas.positive,
            "rolloutPercent": APISchemas.percent, "status": .string(enumeration: API.releaseStatuses),
            "requested": APISchemas.time, "decided": APISchemas.optionalTime,
        ]
    }
}
extension API.ReleaseList: WireObject {}
extension API.ReleasePlan: WireObject {}
extension API.ReleasePlan.Change: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "pack": APISchemas.id,
            // The version a plan moves to is always one: the type shares `Side` with `from`.
            "to": .object(
                ["version": APISchemas.positive, "rolloutPercent": APISchemas.percent.addingNull],
                required: ["version", "rolloutPercent"]),
            "catalogVersion": .unsigned(maximum: UInt64(Int64.max)),
        ]
    }
}
extension API.ReleasePlan.Side: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        ["version": APISchemas.positive, "rolloutPercent": APISchemas.percent]
    }
}
extension API.Rejection: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "reason": .string(
                pattern: APISchemas.displayTextPattern, maxLength: API.Limits.longestReason,
                description: "One line of text: no control or bidirectional characters")
        ]
    }
}
extension API.Live: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        ["version": APISchemas.positive, "archiveSHA256": APISchemas.sha256]
    }
}
extension API.Candidate: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        ["version": APISchemas.positive, "rolloutPercent": APISchemas.percent]
    }
}
extension API.ChannelPack: WireObject {
    public static var memberSchemas: [String: JSONSchema] { ["pack": APISchemas.id] }
}
extension API.Rollout: WireObject {
    public static var memberSchemas: [String: JSONSchema] { ["pack": APISchemas.id] }
}
extension API.ChannelState: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "app": APISchemas.id, "catalogVersion": .unsigned(maximum: UInt64(Int64.max)),
            "expires": APISchemas.optionalTime, "signingKey": APISchemas.sha256,
        ]
    }
}
extension API.RolloutChange: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "percent": APISchemas.shareOrZero(
                "0 halts the rollout, 100 promotes the candidate; otherwise from 0.01, rounded down to the basis point (99.999 is 99.99)"
            )
        ]
    }
}
extension API.RollbackRequest: WireObject {
    public static var memberSchemas: [String: JSONSchema] { ["version": APISchemas.positive] }
}
extension API.RolledBack: WireObject {
    public static var memberSchemas: [String: JSONSchema] { ["pack": APISchemas.id, "version": APISchemas.positive] }
}
extension API.WithdrawRequest: WireObject {}
extension API.Withdrawn: WireObject {}

extension API.Token: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "id": APISchemas.positive, "person": APISchemas.person, "created": APISchemas.time,
            "lastUsed": APISchemas.optionalTime, "expires": APISchemas.optionalTime,
            "revoked": APISchemas.optionalTime,
        ]
    }
}
extension API.TokenList: WireObject {}
extension API.TokenCreate: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "person": .nullableString(
                pattern: APISchemas.displayTextPattern, minLength: 1, maxLength: API.Limits.longestTokenLabel,
                description: "Who it belongs to (a person or a service account); null or absent: the creator's person"),
            "label": .nullableString(
                pattern: APISchemas.displayTextPattern, maxLength: API.Limits.longestTokenLabel,
                description: "One line of text: no control or bidirectional characters; null or absent is \"\""),
            "expiresInSeconds": .integer(
                minimum: API.Limits.shortestTokenLifetime, maximum: API.Limits.longestTokenLifetime),
        ]
    }
}
extension API.IssuedToken: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "id": APISchemas.positive, "token": .string(pattern: "^blt_[0-9a-f]{64}$"), "person": APISchemas.person,
            "created": APISchemas.time, "expires": APISchemas.optionalTime,
        ]
    }
}
extension API.WhoAmI: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        ["tokenId": APISchemas.positive, "person": APISchemas.person, "expires": APISchemas.optionalTime]
    }
}

extension API.AuditEntry: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "id": APISchemas.positive, "time": APISchemas.time, "app": APISchemas.id, "pack": APISchemas.id,
            "version": APISchemas.positive, "action": .string(enumeration: API.auditActions),
            "details": JSONSchema(
                type: ["object"], description: "What changed: string values (channel, percent, from, to, reason, …)"),
        ]
    }
}
extension API.AuditEntry.Actor: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        ["tokenId": APISchemas.positive, "role": .string(enumeration: Role.allCases.map(\.rawValue) + ["system"])]
    }
}
extension API.AuditPage: WireObject {
    public static var memberSchemas: [String: JSONSchema] { ["next": APISchemas.positive] }
}
extension API.DownloadRow: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "date": APISchemas.date, "pack": APISchemas.id, "version": APISchemas.positive,
            "kind": .string(enumeration: API.downloadKinds), "requests": APISchemas.count, "bytes": APISchemas.count,
        ]
    }
}
extension API.Downloads: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        ["app": APISchemas.id, "from": APISchemas.date, "to": APISchemas.date]
    }
}
extension API.SigningKey: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        ["keyId": APISchemas.sha256, "since": APISchemas.time, "retired": APISchemas.optionalTime]
    }
}
extension API.Keys: WireObject {}
extension API.Keys.Current: WireObject {
    public static var memberSchemas: [String: JSONSchema] { ["keyId": APISchemas.sha256, "since": APISchemas.time] }
}
extension API.Keys.CatalogExpiry: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        ["app": APISchemas.id, "version": .unsigned(maximum: UInt64(Int64.max)), "expires": APISchemas.time]
    }
}

extension API.HeldRelease: WireObject {
    public static var memberSchemas: [String: JSONSchema] { ["pack": APISchemas.id, "version": APISchemas.positive] }
}
extension API.InstallCounts: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        let count = JSONSchema.integer(minimum: 0, maximum: Int64(API.Limits.installsPerReport))
        return [
            "pack": APISchemas.id, "version": APISchemas.positive, "started": count, "finished": count,
            "failed": count,
        ]
    }
}
extension API.DeviceReport: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "held": .array(
                .ref("HeldRelease"),
                description:
                    "What the device holds now (at most \(API.Limits.reportEntries)); absent when unchanged today"),
            "earlierToday": .array(
                .ref("HeldRelease"),
                description: "What its earlier report of the same UTC day said it held; absent on the day's first"),
            "installs": .array(.ref("InstallCounts"), description: "At most \(API.Limits.reportEntries) releases"),
        ]
    }
}
extension API.ReportCounted: WireObject {
    public static var memberSchemas: [String: JSONSchema] { ["counted": APISchemas.count] }
}
extension API.AdoptionRow: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "date": APISchemas.date, "pack": APISchemas.id, "version": APISchemas.positive,
            "devices": APISchemas.count, "started": APISchemas.count, "finished": APISchemas.count,
            "failed": APISchemas.count,
        ]
    }
}
extension API.Adoption: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        ["app": APISchemas.id, "from": APISchemas.date, "to": APISchemas.date, "threshold": APISchemas.positive]
    }
}
extension API.PhasedRolloutRequest: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "steps": .array(
                APISchemas.rolloutShare, minItems: 1, maxItems: API.Limits.phaseSteps,
                description:
                    "The shares it steps through, taken in rising order (a share given twice once); 100 promotes the candidate"
            ),
            "stepSeconds": .integer(
                minimum: Int64(API.Limits.shortestPhaseStep), maximum: Int64(API.Limits.longestPhaseStep)),
        ]
    }
}
extension API.PhasedRollout: WireObject {
    public static var memberSchemas: [String: JSONSchema] {
        [
            "app": APISchemas.id, "pack": APISchemas.id, "version": APISchemas.positive,
            "steps": .array(APISchemas.percent), "stepSeconds": APISchemas.positive, "step": APISchemas.count,
            "stepSince": APISchemas.time, "state": .string(enumeration: API.phaseStates),
        ]
    }
}
