extension API {
    public static let getOpenAPI = Endpoint<NoBody, NoBody>(
        "GET", "/api/openapi.json", role: nil,
        doc: EndpointDoc(
            "getOpenAPI", tag: "meta", "This document (generated from the server's route table).",
            usesDatabase: false,
            responses: [.init(200, "The OpenAPI document.", .anyObject)]))

    public static let listApps = Endpoint<NoBody, AppList>(
        "GET", "/api/apps", role: .reader,
        doc: EndpointDoc(
            "listApps", tag: "apps", "List apps.", responses: [.init(200, "Every app, by ID.", .ref("AppList"))]))

    public static let createApp = Endpoint<AppCreate, App>(
        "POST", "/api/apps", role: .admin,
        doc: EndpointDoc(
            "createApp", tag: "apps", "Create an app, optionally with the four-eyes rule.", body: .ref("AppCreate"),
            responses: [
                .init(
                    201, "The app.", .ref("App"),
                    links: [.init("createPack", to: "createPack", parameters: ["app": "$response.body#/id"])]),
                .init(409, "The app exists already."),
            ]))

    public static let changeApp = Endpoint<AppChange, App>(
        "PATCH", "/api/apps/{app}", role: .admin,
        doc: EndpointDoc(
            "changeApp", tag: "apps",
            "Turn the app's four-eyes rule on or off, or set its second-reviewer rule (0 turns it off).",
            body: .ref("AppChange"),
            responses: [.init(200, "The app.", .ref("App"))]))

    public static let listPacks = Endpoint<NoBody, PackList>(
        "GET", "/api/apps/{app}/packs", role: .reader,
        doc: EndpointDoc(
            "listPacks", tag: "packs", "List an app's packs with their version counts.",
            responses: [.init(200, "The packs, by ID.", .ref("PackList"))]))

    public static let createPack = Endpoint<PackCreate, PackCreated>(
        "POST", "/api/apps/{app}/packs", role: .uploader,
        doc: EndpointDoc(
            "createPack", tag: "packs", "Create a pack.", body: .ref("PackCreate"),
            responses: [
                .init(
                    201, "The pack.", .ref("PackCreated"),
                    links: [
                        .init(
                            "createVersion", to: "createVersion",
                            parameters: ["app": "$response.body#/app", "pack": "$response.body#/id"]),
                        .init(
                            "listVersions", to: "listVersions",
                            parameters: ["app": "$response.body#/app", "pack": "$response.body#/id"]),
                    ]),
                .init(409, "The pack exists already."), .init(413, "The app has the most packs allowed."),
            ]))

    public static let listVersions = Endpoint<NoBody, VersionList>(
        "GET", "/api/apps/{app}/packs/{pack}/versions", role: .reader,
        doc: EndpointDoc(
            "listVersions", tag: "versions", "List a pack's versions, newest first.",
            responses: [.init(200, "The versions.", .ref("VersionList"))]))

    public static let createVersion = Endpoint<VersionCreate, Version>(
        "POST", "/api/apps/{app}/packs/{pack}/versions", role: .uploader,
        doc: EndpointDoc(
            "createVersion", tag: "versions",
            "Create the next version, awaiting an upload of exactly size bytes; with archiveSHA256, find a version of that archive instead.",
            body: .ref("VersionCreate"),
            responses: [
                .init(
                    201, "The new version, awaiting its upload.", .ref("Version"),
                    headers: [(name: "Location", description: "The version's URL.", schema: .string())],
                    links: [
                        .init(
                            "uploadArchive", to: "uploadArchive",
                            parameters: versionInAnswer),
                        .init(
                            "getVersion", to: "getVersion",
                            parameters: versionInAnswer),
                    ]),
                .init(
                    200,
                    "A version of this archive (same SHA-256 and size) exists and is not FAILED: nothing was created; "
                        + "AWAITING_UPLOAD resumes at received.", .ref("Version")),
                .init(413, "The version would bring the app over its quota."),
            ]))

    public static let getVersion = Endpoint<NoBody, Version>(
        "GET", "/api/apps/{app}/packs/{pack}/versions/{version}", role: .reader,
        doc: EndpointDoc(
            "getVersion", tag: "versions", "One version: its state, bytes received, digest.",
            responses: [.init(200, "The version.", .ref("Version"))]))

    public static let deleteVersion = Endpoint<NoBody, Deleted>(
        "DELETE", "/api/apps/{app}/packs/{pack}/versions/{version}", role: .admin,
        doc: EndpointDoc(
            "deleteVersion", tag: "versions", "Delete a version no channel uses.",
            responses: [
                .init(200, "Deleted.", .ref("Deleted")), .init(409, "The version is released on a channel."),
            ]))

    /// The header of a resumable upload's part: in a request, the byte the part starts at; in the
    /// answer, the bytes received so far (where the next part starts).
    public static let uploadOffsetHeader = "Upload-Offset"

    public static let uploadArchive = Endpoint<NoBody, Version>(
        "PUT", "/api/apps/{app}/packs/{pack}/versions/{version}/archive", role: .uploader,
        doc: EndpointDoc(
            "uploadArchive", tag: "versions",
            "Upload the archive, or its next part from Upload-Offset (the bytes received so far).",
            parameters: [
                .init(
                    header: uploadOffsetHeader, "The byte this part starts at: the version's received (0 by default).",
                    APISchemas.count)
            ],
            rawBody: "application/octet-stream",
            responses: [
                .init(
                    200, "Part of the archive arrived; continue from received.", .ref("Version"),
                    headers: [
                        (
                            name: uploadOffsetHeader,
                            description: "The bytes received now: where the next part starts.",
                            schema: .string(pattern: "^[0-9]+$")
                        )
                    ]),
                .init(
                    202, "The whole archive arrived; it is being processed.", .ref("Version"),
                    headers: [
                        (
                            name: uploadOffsetHeader, description: "The bytes received now (the size).",
                            schema: .string(pattern: "^[0-9]+$")
                        )
                    ],
                    links: [
                        .init(
                            "getVersion", to: "getVersion",
                            parameters: versionInAnswer),
                        .init(
                            "createRelease", to: "createRelease", parameters: ["app": "$response.body#/app"],
                            requestBody: [
                                "pack": "$response.body#/pack", "version": "$response.body#/version",
                                "channel": "external",
                            ]),
                    ]),
                .init(
                    403,
                    "The version was created by another token and this one is not an admin token (the message names the token that may upload it)."
                ),
                .init(
                    409,
                    "The version is not awaiting an upload, the offset is not the bytes received, or another upload to it is running."
                ),
                .init(
                    413,
                    "The body would go past the declared size, or the complete version would bring the app over its quota (the bytes stay; finish it once there is room)."
                ),
            ]))

    public static let listReleases = Endpoint<NoBody, ReleaseList>(
        "GET", "/api/apps/{app}/releases", role: .reader,
        doc: EndpointDoc(
            "listReleases", tag: "releases", "List release requests, oldest first: who asked, who decided, when.",
            parameters: [
                .init(query: "channel", "Only this channel's requests.", APISchemas.channel),
                .init(
                    query: "status", "Only requests of this status.", .string(enumeration: API.releaseStatuses)),
            ],
            responses: [.init(200, "The requests.", .ref("ReleaseList"))]))

    public static let createRelease = Endpoint<ReleaseCreate, ReleaseOutcome>(
        "POST", "/api/apps/{app}/releases", role: .uploader,
        doc: EndpointDoc(
            "createRelease", tag: "releases",
            "Release a COMPLETE version: at once on internal, as a request on external and production; dryRun says what would change.",
            body: .ref("ReleaseCreate"),
            responses: [
                .init(
                    200, "Released on internal; or, with dryRun, the change it would make (nothing written).",
                    JSONSchema(anyOf: [.ref("Released"), .ref("ReleasePlan")])),
                .init(
                    202, "A request awaiting a reviewer.", .ref("ReleaseRequested"),
                    links: [
                        .init(
                            "approveRelease", to: "approveRelease",
                            parameters: ["app": "$response.body#/request/app", "id": "$response.body#/request/id"]),
                        .init(
                            "rejectRelease", to: "rejectRelease",
                            parameters: ["app": "$response.body#/request/app", "id": "$response.body#/request/id"]),
                    ]),
                .init(
                    409,
                    "The app has no such pack or version, the version is not COMPLETE, or a rollout with no live version on production to stay on."
                ),
            ]))

    public static let approveRelease = Endpoint<NoBody, ReleaseRequest>(
        "POST", "/api/apps/{app}/releases/{id}/approve", role: .reviewer,
        doc: EndpointDoc(
            "approveRelease", tag: "releases",
            "Approve a pending request: its version goes live, or is rolled out.",
            responses: [
                .init(
                    200, "The approved request.", .ref("ReleaseRequest"),
                    links: [
                        .init(
                            "getChannel", to: "getChannel",
                            parameters: ["app": "$response.body#/app", "channel": "$response.body#/channel"])
                    ]),
                .init(
                    403,
                    "The app's four-eyes rule: the token that made the request cannot approve it (code fourEyes)."),
                .init(
                    409,
                    "The request is not pending, its version is no longer COMPLETE, or a rollout with no live version to stay on."
                ),
            ]))

    public static let rejectRelease = Endpoint<Rejection, ReleaseRequest>(
        "POST", "/api/apps/{app}/releases/{id}/reject", role: .reviewer,
        doc: EndpointDoc(
            "rejectRelease", tag: "releases", "Reject a pending request, saying why.", body: .ref("Rejection"),
            responses: [
                .init(200, "The rejected request.", .ref("ReleaseRequest")),
                .init(409, "The request is not pending."),
            ]))

    public static let getChannel = Endpoint<NoBody, ChannelState>(
        "GET", "/api/apps/{app}/channels/{channel}", role: .reader,
        doc: EndpointDoc(
            "getChannel", tag: "releases",
            "What the channel publishes: per pack the live version and the candidate being rolled out.",
            responses: [
                .init(200, "The channel's record (the signed catalog says the same).", .ref("ChannelState"))
            ]))

    public static let rollback = Endpoint<RollbackRequest, RolledBack>(
        "POST", "/api/apps/{app}/packs/{pack}/rollback", role: .reviewer,
        doc: EndpointDoc(
            "rollback", tag: "releases",
            "Roll back: to a version; without one, drop the candidate, or put the version live before the current one back.",
            body: .ref("RollbackRequest"),
            responses: [
                .init(200, "What is live now.", .ref("RolledBack")),
                .init(
                    409,
                    "The pack is not on that channel; the version does not exist, is not COMPLETE or was never live there; or no earlier version was live."
                ),
            ]))

    public static let rollout = Endpoint<RolloutChange, Rollout>(
        "POST", "/api/apps/{app}/packs/{pack}/rollout", role: .reviewer,
        doc: EndpointDoc(
            "rollout", tag: "releases",
            "Change the production candidate's share: 0 halts, 100 promotes it to live.",
            body: .ref("RolloutChange"),
            responses: [
                .init(200, "The pack on production now.", .ref("Rollout")),
                .init(409, "No staged rollout on production."),
            ]))

    public static let setPhasedRollout = Endpoint<PhasedRolloutRequest, PhasedRollout>(
        "POST", "/api/apps/{app}/packs/{pack}/phases", role: .reviewer,
        doc: EndpointDoc(
            "setPhasedRollout", tag: "releases",
            "Raise the production candidate's share step by step (one step every stepSeconds); it halts by itself (share 0) when the candidate's install failure rate, as devices report it, exceeds the live version's. Changing the rollout by hand cancels it.",
            body: .ref("PhasedRolloutRequest"),
            responses: [
                .init(200, "The phased rollout, at its first step.", .ref("PhasedRollout")),
                .init(403, "A step above the app's second-reviewer share, set by the person who approved the release."),
                .init(409, "No staged rollout on production."),
            ]))

    public static let getPhasedRollout = Endpoint<NoBody, PhasedRollout>(
        "GET", "/api/apps/{app}/packs/{pack}/phases", role: .reader,
        doc: EndpointDoc(
            "getPhasedRollout", tag: "releases", "The pack's phased rollout on production, if it ever had one.",
            responses: [
                .init(200, "Where it stands.", .ref("PhasedRollout")),
                .init(404, "The pack never had a phased rollout."),
            ]))

    public static let withdraw = Endpoint<WithdrawRequest, Withdrawn>(
        "POST", "/api/apps/{app}/packs/{pack}/withdraw", role: .reviewer,
        doc: EndpointDoc(
            "withdraw", tag: "releases", "Remove the pack from a channel (clients report it obsolete).",
            body: .ref("WithdrawRequest"),
            responses: [
                .init(200, "Withdrawn.", .ref("Withdrawn")), .init(409, "The pack is not on that channel."),
            ]))

    public static let listTokens = Endpoint<NoBody, TokenList>(
        "GET", "/api/tokens", role: .admin,
        doc: EndpointDoc(
            "listTokens", tag: "tokens", "List tokens (never their secrets).",
            responses: [.init(200, "The tokens, oldest first.", .ref("TokenList"))]))

    public static let createToken = Endpoint<TokenCreate, IssuedToken>(
        "POST", "/api/tokens", role: .admin,
        doc: EndpointDoc(
            "createToken", tag: "tokens", "Create a token, optionally expiring; its secret is shown once.",
            body: .ref("TokenCreate"),
            responses: [
                .init(
                    201, "The token and its secret.", .ref("IssuedToken"),
                    links: [
                        .init("rotateToken", to: "rotateToken", parameters: ["id": "$response.body#/id"]),
                        .init("revokeToken", to: "revokeToken", parameters: ["id": "$response.body#/id"]),
                    ])
            ]))

    public static let revokeToken = Endpoint<NoBody, Token>(
        "DELETE", "/api/tokens/{id}", role: .admin,
        doc: EndpointDoc(
            "revokeToken", tag: "tokens", "Revoke a token: every server refuses it at once.",
            responses: [
                .init(200, "The token, revoked (revoked is when).", .ref("Token")),
                .init(409, "It is the last admin token that works."),
            ]))

    public static let rotateToken = Endpoint<NoBody, IssuedToken>(
        "POST", "/api/tokens/{id}/rotate", role: .admin,
        doc: EndpointDoc(
            "rotateToken", tag: "tokens",
            "Give a token a new secret (same id, role, label); the old secret stops working at once.",
            responses: [
                .init(201, "The token and its new secret.", .ref("IssuedToken")),
                .init(409, "The token was revoked."),
            ]))

    public static let listAudit = Endpoint<NoBody, AuditPage>(
        "GET", "/api/audit", role: .reader,
        doc: EndpointDoc(
            "listAudit", tag: "audit", "The audit trail, newest first, one page at a time.",
            parameters: [
                .init(query: "app", "Only this app's entries.", APISchemas.id),
                .init(query: "action", "Only this action.", .string(enumeration: API.auditActions)),
                .init(
                    query: "limit", "Entries per page (default 100).",
                    .integer(minimum: 1, maximum: Int64(API.Limits.auditPageLimit))),
                .init(
                    query: "before", "Only entries older than this id: the next of the page before.",
                    APISchemas.positive),
            ],
            responses: [.init(200, "One page of entries.", .ref("AuditPage"))]))

    public static let getDownloads = Endpoint<NoBody, Downloads>(
        "GET", "/api/apps/{app}/downloads", role: .reader,
        doc: EndpointDoc(
            "getDownloads", tag: "downloads",
            "Requests and bytes of the app's catalogs, pack archives and Apple manifests and packs, per UTC day (counted by the server, written every few seconds).",
            parameters: [
                .init(
                    query: "days", "Days back from today, today included (default 30).",
                    .integer(minimum: 1, maximum: Int64(API.Limits.longestDownloadReport)))
            ],
            responses: [.init(200, "The counts.", .ref("Downloads"))]))

    public static let getAdoption = Endpoint<NoBody, Adoption>(
        "GET", "/api/apps/{app}/adoption", role: .reader,
        doc: EndpointDoc(
            "getAdoption", tag: "downloads",
            "What the app's devices reported, per UTC day, channel and release: devices holding it, installs started, finished and failed. Figures below the threshold are null.",
            parameters: [
                .init(
                    query: "days", "Days back from today, today included (default 30).",
                    .integer(minimum: 1, maximum: Int64(API.Limits.longestDownloadReport)))
            ],
            responses: [.init(200, "The figures.", .ref("Adoption"))]))

    public static let reportDevice = Endpoint<DeviceReport, ReportCounted>(
        "POST", "/api/apps/{app}/reports", role: nil,
        doc: EndpointDoc(
            "reportDevice", tag: "devices",
            "A device's report (no token, nothing that names the device): the releases it holds, once per UTC day and when they change, and its installs' outcomes. Releases the app does not have are not counted.",
            body: .ref("DeviceReport"),
            responses: [.init(200, "How many entries were counted.", .ref("ReportCounted"))]))

    public static let getKeys = Endpoint<NoBody, Keys>(
        "GET", "/api/keys", role: .reader,
        doc: EndpointDoc(
            "getKeys", tag: "keys", "The signing key, the rotation history, and each catalog's expiry.",
            responses: [.init(200, "The keys and catalogs.", .ref("Keys"))]))

    public static let whoami = Endpoint<NoBody, WhoAmI>(
        "GET", "/api/whoami", role: .reader,
        doc: EndpointDoc(
            "whoami", tag: "tokens", "The calling token: its id, label, role and expiry.",
            responses: [.init(200, "The caller.", .ref("WhoAmI"))]))

    /// The link parameters naming the version an answer is (`$response.body#/app`, `/pack`, `/version`).
    static let versionInAnswer = [
        "app": "$response.body#/app", "pack": "$response.body#/pack", "version": "$response.body#/version",
    ]
}
