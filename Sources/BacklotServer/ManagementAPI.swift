import BacklotBasics
import BacklotCatalog
import BacklotFormat
import BacklotHTTPServer
import BacklotJSON
import BacklotRepository
import Foundation

/// The management API (`/api/…`): JSON over HTTP(S) with bearer tokens and roles.
/// Every route is listed in ``routes`` — which is what the router dispatches on and what
/// `GET /api/openapi.json` documents (a test checks the two agree).
public struct ManagementAPI: Sendable {
    public let repository: Repository
    let metrics: ServerMetrics?

    public init(repository: Repository, metrics: ServerMetrics? = nil) {
        self.repository = repository
        self.metrics = metrics
    }

    /// One route: method, path template (`{app}`-style parameters), the role it needs.
    public struct Route: Sendable {
        public let method: String
        public let template: String
        /// nil: no token needed.
        public let role: Role?
        /// What the OpenAPI document says of it.
        public let doc: RouteDoc
        let handle: @Sendable (ManagementAPI, Call) throws -> HTTPRoute
    }

    /// A matched call: parameters from the path, the request, and the caller (nil on a route that needs no token).
    struct Call: Sendable {
        let request: HTTPRequest
        let parameters: [String: String]
        let caller: Caller?
        func parameter(_ name: String) -> String { parameters[name] ?? "" }
        /// A whole-number path parameter (a version number, a request ID): 400 naming it and the range otherwise.
        func number(_ name: String) throws -> Int {
            try CheckedInteger.parse(
                parameter(name), as: Int.self, "the path parameter \(name)", in: 1...Int.max, context: request.path)
        }
        /// A channel named in the path: 400 otherwise.
        func channel(_ name: String) throws -> Channel {
            guard let channel = Channel(rawValue: parameter(name)) else {
                throw BacklotError(.invalidInput, "the channel must be internal, external or production", context: name)
            }
            return channel
        }
    }

    /// Every route of the API.
    public static let routes: [Route] = releaseRoutes + extraRoutes

    /// The request's token checked again, for work that is done after the head arrived: the end
    /// of a buffered body, the parts and the end of an upload. The token is read from the
    /// database each time (``Tokens/authenticate(_:)``), so a revocation or a rotation made
    /// meanwhile — on any server of the database — stops a request that was opened before it.
    struct Reauthorization: Sendable {
        let api: ManagementAPI
        let request: HTTPRequest
        let role: Role
        /// The caller now. - Throws: `unauthorized` (revoked, expired, rotated away), `forbidden`.
        func check() throws -> Caller { try api.authorize(request, needs: role) }
    }

    /// The check of the request whose route is running (nil on a route that needs no token).
    @TaskLocal static var reauthorization: Reauthorization?

    /// Apps, packs, versions, releases and tokens.
    static let releaseRoutes: [Route] = [
        Route(
            method: "GET", template: "/api/openapi.json", role: nil,
            doc: RouteDoc(
                "getOpenAPI", tag: "meta", "This document (generated from the server's route table).",
                usesDatabase: false,
                responses: [.init(200, "The OpenAPI document.", .anyObject)])
        ) { _, _ in
            .respond(
                HTTPResponse(
                    status: 200, headers: [("Content-Type", "application/json")], body: .bytes(OpenAPIDocument.bytes),
                    route: "api"))
        },
        Route(
            method: "GET", template: "/api/apps", role: .reader,
            doc: RouteDoc(
                "listApps", tag: "apps", "List apps.", responses: [.init(200, "Every app, by ID.", .ref("AppList"))])
        ) { api, _ in
            .respond(
                .json(200, JSONNode.object(["apps": .array(try api.repository.apps.list().map(\.json))]).serialized()))
        },
        Route(
            method: "POST", template: "/api/apps", role: .admin,
            doc: RouteDoc(
                "createApp", tag: "apps", "Create an app, optionally with the four-eyes rule.", body: .ref("AppCreate"),
                responses: [
                    .init(
                        201, "The app.", .ref("App"),
                        links: [.init("createPack", to: "createPack", parameters: ["app": "$response.body#/id"])]),
                    .init(409, "The app exists already."),
                ])
        ) { api, _ in
            body(fields: ["id", "fourEyes"]) { b in
                let app = try api.repository.apps.create(try b.string("id"), fourEyes: try b.bool("fourEyes") ?? false)
                return .json(201, app.json.serialized())
            }
        },
        Route(
            method: "PATCH", template: "/api/apps/{app}", role: .admin,
            doc: RouteDoc(
                "changeApp", tag: "apps", "Turn the app's four-eyes rule on or off.", body: .ref("AppChange"),
                responses: [.init(200, "The app.", .ref("App"))])
        ) { api, call in
            body(fields: ["fourEyes"]) { b in
                guard let on = try b.bool("fourEyes") else {
                    throw BacklotError(
                        .invalidInput, "\"fourEyes\" is required: true or false", context: "request body")
                }
                return .json(200, try api.repository.apps.setFourEyes(app: call.parameter("app"), on).json.serialized())
            }
        },
        Route(
            method: "GET", template: "/api/apps/{app}/packs", role: .reader,
            doc: RouteDoc(
                "listPacks", tag: "packs", "List an app's packs with their version counts.",
                responses: [.init(200, "The packs, by ID.", .ref("PackList"))])
        ) { api, call in
            .respond(
                .json(
                    200,
                    JSONNode.object([
                        "packs": .array(try api.repository.apps.packList(app: call.parameter("app")).map(\.json))
                    ]).serialized()))
        },
        Route(
            method: "POST", template: "/api/apps/{app}/packs", role: .uploader,
            doc: RouteDoc(
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
                ])
        ) { api, call in
            body(fields: ["id"]) { b in
                let id = try b.string("id")
                try api.repository.apps.createPack(app: call.parameter("app"), id: id)
                return .json(
                    201, JSONNode.object(["app": .string(call.parameter("app")), "id": .string(id)]).serialized())
            }
        },
        Route(
            method: "GET", template: "/api/apps/{app}/packs/{pack}/versions", role: .reader,
            doc: RouteDoc(
                "listVersions", tag: "versions", "List a pack's versions, newest first.",
                responses: [.init(200, "The versions.", .ref("VersionList"))])
        ) { api, call in
            let list = try api.repository.uploads.versions(app: call.parameter("app"), pack: call.parameter("pack"))
            return .respond(.json(200, JSONNode.object(["versions": .array(list.map(\.json))]).serialized()))
        },
        Route(
            method: "POST", template: "/api/apps/{app}/packs/{pack}/versions", role: .uploader,
            doc: RouteDoc(
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
                                parameters: [
                                    "app": "$response.body#/app", "pack": "$response.body#/pack",
                                    "version": "$response.body#/version",
                                ]),
                            .init(
                                "getVersion", to: "getVersion",
                                parameters: [
                                    "app": "$response.body#/app", "pack": "$response.body#/pack",
                                    "version": "$response.body#/version",
                                ]),
                        ]),
                    .init(
                        200,
                        "A version of this archive (same SHA-256 and size) exists and is not FAILED: nothing was created; "
                            + "AWAITING_UPLOAD resumes at received.", .ref("Version")),
                    .init(413, "The version would bring the app over its quota."),
                ])
        ) { api, call in
            body(fields: ["size", "format", "manifest", "archiveSHA256"]) { b in
                let formatText = try b.optionalString("format") ?? "pack"
                guard let format = ArchiveFormat(rawValue: formatText) else {
                    throw BacklotError(.invalidInput, "\"format\" must be pack or aar", context: "request body")
                }
                let app = call.parameter("app")
                let pack = call.parameter("pack")
                let (v, created) = try api.repository.uploads.openVersion(
                    app: app, pack: pack,
                    size: try b.integer("size", as: UInt64.self, in: 1...ManagementAPI.largestByteCount),
                    format: format, manifest: b.root["manifest"], archiveSHA256: try b.optionalString("archiveSHA256"))
                var r = HTTPResponse.json(created ? 201 : 200, v.json.serialized())
                if created { r.headers.append(("Location", "/api/apps/\(app)/packs/\(pack)/versions/\(v.number)")) }
                return r
            }
        },
        Route(
            method: "GET", template: "/api/apps/{app}/packs/{pack}/versions/{version}", role: .reader,
            doc: RouteDoc(
                "getVersion", tag: "versions", "One version: its state, bytes received, digest.",
                responses: [.init(200, "The version.", .ref("Version"))])
        ) { api, call in
            .respond(
                .json(
                    200,
                    try api.repository.uploads.version(
                        app: call.parameter("app"), pack: call.parameter("pack"), number: call.number("version")
                    ).json.serialized()))
        },
        Route(
            method: "DELETE", template: "/api/apps/{app}/packs/{pack}/versions/{version}", role: .admin,
            doc: RouteDoc(
                "deleteVersion", tag: "versions", "Delete a version no channel uses.",
                responses: [
                    .init(200, "Deleted.", .ref("Deleted")), .init(409, "The version is released on a channel."),
                ])
        ) { api, call in
            try api.repository.uploads.deleteVersion(
                app: call.parameter("app"), pack: call.parameter("pack"), number: call.number("version"))
            return .respond(.json(200, "{\"deleted\":true}"))
        },
        Route(
            method: "PUT", template: "/api/apps/{app}/packs/{pack}/versions/{version}/archive", role: .uploader,
            doc: RouteDoc(
                "uploadArchive", tag: "versions",
                "Upload the archive, or its next part from Upload-Offset (the bytes received so far).",
                parameters: [
                    .init(
                        header: "Upload-Offset", "The byte this part starts at: the version's received (0 by default).",
                        APISchemas.count)
                ],
                rawBody: "application/octet-stream",
                responses: [
                    .init(
                        200, "Part of the archive arrived; continue from received.", .ref("Version"),
                        headers: [
                            (
                                name: "Upload-Offset",
                                description: "The bytes received now: where the next part starts.",
                                schema: .string(pattern: "^[0-9]+$")
                            )
                        ]),
                    .init(
                        202, "The whole archive arrived; it is being processed.", .ref("Version"),
                        headers: [
                            (
                                name: "Upload-Offset", description: "The bytes received now (the size).",
                                schema: .string(pattern: "^[0-9]+$")
                            )
                        ],
                        links: [
                            .init(
                                "getVersion", to: "getVersion",
                                parameters: [
                                    "app": "$response.body#/app", "pack": "$response.body#/pack",
                                    "version": "$response.body#/version",
                                ]),
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
                ])
        ) { api, call in
            let offset = try CheckedInteger.parse(
                call.request.header("Upload-Offset") ?? "0", as: UInt64.self, "the Upload-Offset header",
                in: 0...ManagementAPI.largestByteCount, context: call.request.path)
            let app = call.parameter("app")
            let pack = call.parameter("pack")
            let number = try call.number("version")
            // Only the token that created the version, or an admin, may upload its archive (403 otherwise).
            let upload = try api.repository.uploads.beginUpload(
                app: app, pack: pack, number: number, offset: offset, by: call.caller)
            // offset equals the bytes received, so it is at most the declared size: no overflow here.
            if let length = call.request.header("Content-Length").flatMap({ CheckedInteger.parse($0, as: UInt64.self) }
            ), length > upload.declared - offset {
                try upload.close()
                api.metrics?.recordUpload("refused")
                throw HTTPError(
                    413, code: "quotaExceeded",
                    "the upload of \(length) bytes from byte \(offset) would go past the \(upload.declared) bytes declared",
                    context: "\(app)/\(pack)/\(number)", hint: "send exactly the bytes the version still lacks")
            }
            return .receive(
                UploadReceiver(
                    api: api, upload: upload, app: app, pack: pack, number: number,
                    reauthorization: ManagementAPI.reauthorization))
        },
        Route(
            method: "GET", template: "/api/apps/{app}/releases", role: .reader,
            doc: RouteDoc(
                "listReleases", tag: "releases", "List release requests, oldest first: who asked, who decided, when.",
                parameters: [
                    .init(query: "channel", "Only this channel's requests.", APISchemas.channel),
                    .init(
                        query: "status", "Only requests of this status.", .string(enumeration: ReleaseRequest.statuses)),
                ],
                responses: [.init(200, "The requests.", .ref("ReleaseList"))])
        ) { api, call in
            var channel: Channel? = nil
            if let text = call.request.query["channel"] {
                guard let c = Channel(rawValue: text) else {
                    throw BacklotError(
                        .invalidInput, "the channel must be internal, external or production", context: "channel")
                }
                channel = c
            }
            let list = try api.repository.releases.requests(
                app: call.parameter("app"), channel: channel, status: call.request.query["status"])
            return .respond(.json(200, JSONNode.object(["releases": .array(list.map(\.json))]).serialized()))
        },
        Route(
            method: "POST", template: "/api/apps/{app}/releases", role: .uploader,
            doc: RouteDoc(
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
                ])
        ) { api, call in
            body(fields: ["pack", "version", "channel", "rollout", "dryRun"]) { b in
                let channel = try b.channel("channel")
                let app = call.parameter("app")
                let pack = try b.string("pack")
                // The same rule as a pack in the path: an invalid ID is 400, not "no such pack".
                if let problem = PackID.problem(with: pack) {
                    throw HTTPError(400, code: "badRequest", problem.message, context: "\"pack\"")
                }
                let version = try b.integer("version", as: Int.self, in: 1...Int.max)
                let rollout = try b.percent("rollout")
                if try b.bool("dryRun") == true {
                    return .json(
                        200,
                        try api.repository.releases.plan(
                            app: app, pack: pack, version: version, channel: channel, rolloutPercent: rollout
                        ).json.serialized())
                }
                let request = try api.repository.releases.release(
                    app: app, pack: pack, version: version, channel: channel, rolloutPercent: rollout, by: call.caller)
                if let request {
                    return .json(
                        202, JSONNode.object(["released": .bool(false), "request": request.json]).serialized())
                }
                return .json(200, JSONNode.object(["released": .bool(true)]).serialized())
            }
        },
        Route(
            method: "POST", template: "/api/apps/{app}/releases/{id}/approve", role: .reviewer,
            doc: RouteDoc(
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
                ])
        ) { api, call in
            let app = call.parameter("app")
            let id = try call.number("id")
            try api.repository.releases.approve(requestID: id, app: app, by: call.caller)
            return .respond(.json(200, try api.repository.releases.request(id, app: app).json.serialized()))
        },
        Route(
            method: "POST", template: "/api/apps/{app}/releases/{id}/reject", role: .reviewer,
            doc: RouteDoc(
                "rejectRelease", tag: "releases", "Reject a pending request, saying why.", body: .ref("Rejection"),
                responses: [
                    .init(200, "The rejected request.", .ref("ReleaseRequest")),
                    .init(409, "The request is not pending."),
                ])
        ) { api, call in
            body(fields: ["reason"]) { b in
                let app = call.parameter("app")
                let id = try call.number("id")
                let reason = try b.string("reason")
                guard reason.count <= ManagementAPI.longestReason else {
                    throw HTTPError(
                        400, code: "badRequest",
                        "a rejection's reason has at most \(ManagementAPI.longestReason) characters (this one has \(reason.count))",
                        context: "\"reason\"")
                }
                try api.repository.releases.reject(requestID: id, app: app, reason: reason, by: call.caller)
                return .json(200, try api.repository.releases.request(id, app: app).json.serialized())
            }
        },
        Route(
            method: "GET", template: "/api/apps/{app}/channels/{channel}", role: .reader,
            doc: RouteDoc(
                "getChannel", tag: "releases",
                "What the channel publishes: per pack the live version and the candidate being rolled out.",
                responses: [
                    .init(200, "The channel's record (the signed catalog says the same).", .ref("ChannelState"))
                ])
        ) { api, call in
            .respond(
                .json(
                    200,
                    try api.repository.releases.channelState(
                        app: call.parameter("app"), channel: call.channel("channel")
                    ).json
                        .serialized()))
        },
        Route(
            method: "POST", template: "/api/apps/{app}/packs/{pack}/rollback", role: .reviewer,
            doc: RouteDoc(
                "rollback", tag: "releases",
                "Roll back: to a version; without one, drop the candidate, or put the version live before the current one back.",
                body: .ref("RollbackRequest"),
                responses: [
                    .init(200, "What is live now.", .ref("RolledBack")),
                    .init(
                        409,
                        "The pack is not on that channel; the version does not exist, is not COMPLETE or was never live there; or no earlier version was live."
                    ),
                ])
        ) { api, call in
            body(fields: ["channel", "version"]) { b in
                let channel = try b.channel("channel")
                let version =
                    b.root["version"].map { node -> Bool in
                        if case .null = node.kind { return false } else { return true }
                    } == true
                    ? try b.integer("version", as: Int.self, in: 1...Int.max) : nil
                let app = call.parameter("app")
                let pack = call.parameter("pack")
                let live = try api.repository.releases.rollback(app: app, pack: pack, channel: channel, to: version)
                return .json(
                    200,
                    JSONNode.object([
                        "channel": .string(channel.rawValue), "pack": .string(pack), "version": .number(live),
                    ]).serialized())
            }
        },
        Route(
            method: "POST", template: "/api/apps/{app}/packs/{pack}/rollout", role: .reviewer,
            doc: RouteDoc(
                "rollout", tag: "releases",
                "Change the production candidate's share: 0 halts, 100 promotes it to live.",
                body: .ref("RolloutChange"),
                responses: [
                    .init(200, "The pack on production now.", .ref("Rollout")),
                    .init(409, "No staged rollout on production."),
                ])
        ) { api, call in
            body(fields: ["percent"]) { b in
                guard let p = try b.percent("percent", allowingZero: true) else {
                    throw BacklotError(
                        .invalidInput, "\"percent\" is required: a number from 0 to 100", context: "request body",
                        hint: "0 halts the rollout, 100 releases the candidate to every device")
                }
                let app = call.parameter("app")
                let pack = call.parameter("pack")
                try api.repository.releases.setRollout(app: app, pack: pack, percent: p)
                let state = try api.repository.releases.channelState(app: app, channel: .production).packs.first {
                    $0.pack == pack
                }
                return .json(200, ChannelState.packJSON(state, pack: pack, channel: .production).serialized())
            }
        },
        Route(
            method: "POST", template: "/api/apps/{app}/packs/{pack}/withdraw", role: .reviewer,
            doc: RouteDoc(
                "withdraw", tag: "releases", "Remove the pack from a channel (clients report it obsolete).",
                body: .ref("WithdrawRequest"),
                responses: [
                    .init(200, "Withdrawn.", .ref("Withdrawn")), .init(409, "The pack is not on that channel."),
                ])
        ) { api, call in
            body(fields: ["channel"]) { b in
                try api.repository.releases.withdraw(
                    app: call.parameter("app"), pack: call.parameter("pack"), channel: try b.channel("channel"))
                return .json(200, "{\"withdrawn\":true}")
            }
        },
        Route(
            method: "GET", template: "/api/tokens", role: .admin,
            doc: RouteDoc(
                "listTokens", tag: "tokens", "List tokens (never their secrets).",
                responses: [.init(200, "The tokens, oldest first.", .ref("TokenList"))])
        ) { api, _ in
            .respond(
                .json(
                    200, JSONNode.object(["tokens": .array(try api.repository.tokens.list().map(\.json))]).serialized())
            )
        },
        Route(
            method: "POST", template: "/api/tokens", role: .admin,
            doc: RouteDoc(
                "createToken", tag: "tokens", "Create a token, optionally expiring; its secret is shown once.",
                body: .ref("TokenCreate"),
                responses: [
                    .init(
                        201, "The token and its secret.", .ref("IssuedToken"),
                        links: [
                            .init("rotateToken", to: "rotateToken", parameters: ["id": "$response.body#/id"]),
                            .init("revokeToken", to: "revokeToken", parameters: ["id": "$response.body#/id"]),
                        ])
                ])
        ) { api, _ in
            body(fields: ["role", "label", "expiresInSeconds"]) { b in
                guard let role = Role(rawValue: try b.string("role")) else {
                    throw BacklotError(
                        .invalidInput, "\"role\" must be admin, uploader, reviewer or reader", context: "request body")
                }
                let lifetime =
                    b.root["expiresInSeconds"].map { node -> Bool in
                        if case .null = node.kind { return false } else { return true }
                    } == true
                    ? try b.integer(
                        "expiresInSeconds", as: Int64.self,
                        in: Tokens.shortestLifetime...Tokens.longestLifetime) : nil
                let token = try api.repository.tokens.issue(
                    role: role, label: try b.optionalString("label") ?? "", expiresIn: lifetime)
                return .json(201, token.json.serialized())
            }
        },
        Route(
            method: "DELETE", template: "/api/tokens/{id}", role: .admin,
            doc: RouteDoc(
                "revokeToken", tag: "tokens", "Revoke a token: every server refuses it at once.",
                responses: [
                    .init(200, "Revoked.", .ref("TokenRevoked")), .init(409, "It is the last admin token that works."),
                ])
        ) { api, call in
            let info = try api.repository.tokens.revoke(id: try call.number("id"))
            return .respond(.json(200, JSONNode.object(["id": .number(info.id), "revoked": .bool(true)]).serialized()))
        },
        Route(
            method: "POST", template: "/api/tokens/{id}/rotate", role: .admin,
            doc: RouteDoc(
                "rotateToken", tag: "tokens",
                "Give a token a new secret (same id, role, label); the old secret stops working at once.",
                responses: [
                    .init(201, "The token and its new secret.", .ref("IssuedToken")),
                    .init(409, "The token was revoked."),
                ])
        ) { api, call in
            .respond(.json(201, try api.repository.tokens.rotate(id: try call.number("id")).json.serialized()))
        },
    ]

    /// The largest byte count or offset the API accepts (what SQLite's 64-bit signed integers hold).
    static let largestByteCount = UInt64(Int64.max)

    /// The longest reason a rejection records, in characters (it is shown in `releases list`).
    static let longestReason = 2000

    /// The largest JSON body a route buffers; a larger one gets 413 before it is read.
    public static let bodyLimit = 64 << 10

    /// Answers `/api/…` requests; nil for other paths.
    /// Headers on every answer of the API: no cache keeps it, no browser sniffs it for another type.
    public static let responseHeaders: [(name: String, value: String)] = [
        (name: "Cache-Control", value: "no-store"), (name: "X-Content-Type-Options", value: "nosniff"),
    ]

    public func route(_ request: HTTPRequest) -> HTTPRoute? {
        guard request.path == "/api" || request.path.hasPrefix("/api/") else { return nil }
        do {
            guard let segments = StaticTree.safeRelativePath(request.path)?.split(separator: "/").map(String.init)
            else {
                throw HTTPError(400, code: "badPath", "the path is not valid")
            }
            var pathMatched = false
            for route in Self.routes {
                guard let parameters = Self.match(route.template, segments) else { continue }
                pathMatched = true
                guard route.method == request.method else { continue }
                let caller = try route.role.map { try authorize(request, needs: $0) }
                for (name, value) in parameters where name == "app" || name == "pack" {
                    if let problem = PackID.problem(with: value) {
                        throw HTTPError(400, code: "badRequest", problem.message, context: name)
                    }
                }
                try Self.checkContentType(request, for: route.doc)
                // The audit trail names the caller of every change this request makes.
                let check = route.role.map { Reauthorization(api: self, request: request, role: $0) }
                return try Caller.$current.withValue(caller) {
                    try Self.$reauthorization.withValue(check) {
                        try route.handle(self, Call(request: request, parameters: parameters, caller: caller))
                    }
                }
            }
            if pathMatched {
                let allowed = Self.routes.filter { Self.match($0.template, segments) != nil }.map(\.method).joined(
                    separator: ", ")
                var r = HTTPResponse.error(
                    405, code: "methodNotAllowed", "use \(allowed)", context: request.path, route: "api")
                r.headers.append(("Allow", allowed))
                return .respond(r)
            }
            throw HTTPError(
                404, code: "notFound", "no such API route", context: "\(request.method) \(request.path)",
                hint: "GET /api/openapi.json lists the routes")
        } catch {
            return .respond(Self.response(for: error, log: repository.log))
        }
    }

    /// A body of another type than the route reads is 415; a body without `Content-Type` is read as the route's type.
    static func checkContentType(_ request: HTTPRequest, for doc: RouteDoc) throws {
        guard let expected = doc.body != nil ? "application/json" : doc.rawBody,
            let given = request.header("Content-Type")
        else { return }
        let media =
            given.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            ?? ""
        guard media == expected else {
            throw HTTPError(
                415, code: "unsupportedMediaType",
                "this route reads \(expected), not \(media.isEmpty ? "an empty type" : media)",
                context: "Content-Type", hint: "send Content-Type: \(expected)")
        }
    }

    static func match(_ template: String, _ segments: [String]) -> [String: String]? {
        let parts = template.split(separator: "/").map(String.init)
        guard parts.count == segments.count else { return nil }
        var parameters: [String: String] = [:]
        for (p, s) in zip(parts, segments) {
            if p.hasPrefix("{") { parameters[String(p.dropFirst().dropLast())] = s } else if p != s { return nil }
        }
        return parameters
    }

    /// The caller of a request that needs `role`: its bearer token must be known, unexpired,
    /// unrevoked (read from the database on every request: a revocation takes effect at once on
    /// every server) and of a role that includes `role`.
    func authorize(_ request: HTTPRequest, needs role: Role) throws -> Caller {
        guard let header = request.header("Authorization"), header.hasPrefix("Bearer ") else {
            throw BacklotError(
                .unauthorized, "this route needs a token", context: "Authorization",
                hint: "send Authorization: Bearer TOKEN")
        }
        let caller = try repository.tokens.authenticate(
            String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces))
        guard caller.role.includes(role) else {
            throw BacklotError(
                .forbidden,
                "\("aeiou".contains(caller.role.rawValue.first ?? "x") ? "an" : "a") \(caller.role.rawValue) token cannot do this; it needs the \(role.rawValue) role",
                context: "token \(caller.id)")
        }
        return caller
    }

    /// Maps errors to HTTP statuses with JSON bodies.
    /// Seconds a client is told to wait (`Retry-After`) while a backend cannot be reached.
    static let unavailableRetryAfter = 5

    /// The answer to an error. It never names a server path (an io error's context is the file
    /// that failed, a SQLite database's name is its file): a context that is one is left out, a
    /// path in the message or the hint is written `[path]`; `log` (the server's log) gets the
    /// whole error of every 5xx answer.
    static func response(for error: any Error, log: ((String) -> Void)? = nil) -> HTTPResponse {
        if let e = error as? HTTPError {
            var r = e.response
            r.route = "api"
            if r.status == 401 { r.headers.append(("WWW-Authenticate", "Bearer")) }
            return r
        }
        if let e = error as? BacklotError {
            let status = Self.status(for: e.code)
            if status >= 500 { log?("API answer \(status): \(e)") }
            var r = HTTPResponse.error(
                status, code: e.code.name, Self.withoutServerPaths(e.message),
                context: e.context.flatMap(Self.publicContext), hint: e.hint.map(Self.withoutServerPaths),
                route: "api")
            if status == 401 { r.headers.append(("WWW-Authenticate", "Bearer")) }
            // The database or the object store is unreachable: the instance recovers by itself.
            if status == 503 { r.headers.append(("Retry-After", String(ManagementAPI.unavailableRetryAfter))) }
            return r
        }
        log?("API answer 500: \(error)")
        return .error(
            500, code: "internal", "the server failed (an internal error; the server's log has the details)",
            route: "api")
    }

    /// Paths of this server's own URLs, which an answer may name (`GET /api/openapi.json`).
    static let urlPathPrefixes = ["/api", "/v1/", "/metrics", "/dashboard"]

    /// Whether `word` (starting with "/") is an absolute path of the server's file system rather than one of its URLs.
    static func isServerPath(_ word: Substring) -> Bool {
        word.hasPrefix("/") && !urlPathPrefixes.contains { word.hasPrefix($0) }
    }

    /// A context the answer may carry: nil when it is a server path (the file an io error names).
    static func publicContext(_ context: String) -> String? {
        isServerPath(Substring(context)) ? nil : withoutServerPaths(context)
    }

    /// `text` with every absolute server path in it (a word starting with "/" after a space, a
    /// quote or a parenthesis, or at the start) written `[path]`.
    static func withoutServerPaths(_ text: String) -> String {
        guard text.contains("/") else { return text }
        var out = ""
        var rest = Substring(text)
        var previous: Character = " "
        while let c = rest.first {
            if c == "/", " \"'(\n=".contains(previous) {
                let end = rest.firstIndex { " \"',):\n".contains($0) } ?? rest.endIndex
                let word = rest[..<end]
                if isServerPath(word) {
                    out += "[path]"
                    rest = rest[end...]
                    previous = "]"
                    continue
                }
            }
            out.append(c)
            previous = c
            rest = rest.dropFirst()
        }
        return out
    }

    /// The HTTP status of an error code. The database or the object store out of reach
    /// (`unavailable`, `transport`) is 503: the instance recovers by itself when they return.
    static func status(for code: BacklotError.Code) -> Int {
        switch code {
        case .notFound: 404
        case .conflict, .alreadyExists: 409
        case .unauthorized: 401
        case .forbidden, .fourEyes: 403
        case .quotaExceeded: 413
        case .unavailable, .transport: 503
        case _ where code.isInvalidInput: 400
        default: 500
        }
    }

    /// A JSON body of at most ``bodyLimit`` bytes holding only `fields`.
    ///
    /// The body arrives later, outside the route's scope: the token is checked again once it has
    /// arrived and before anything is done (a token revoked or rotated while a client trickled
    /// the body in gets 401 and nothing is done), and that check's caller is the one the change
    /// is made and audited as. (The server also gives the body
    /// ``HTTPServer/Configuration/bufferedBodyDeadline`` seconds in all.)
    static func body(fields: Set<String>, _ then: @escaping @Sendable (JSONBody) throws -> HTTPResponse) -> HTTPRoute {
        let caller = Caller.current
        let check = reauthorization
        return .buffer(limit: bodyLimit) { bytes in
            let now: Caller?
            do { now = try check?.check() ?? caller } catch {
                return response(for: error, log: check?.api.repository.log)
            }
            return Caller.$current.withValue(now) {
                answer(bytes, fields: fields, log: check?.api.repository.log, then)
            }
        }
    }

    static func answer(
        _ bytes: [UInt8], fields: Set<String>, log: ((String) -> Void)? = nil,
        _ then: @escaping @Sendable (JSONBody) throws -> HTTPResponse
    ) -> HTTPResponse {
        do {
            let root = try JSONReader(
                source: "request body", allowsComments: false, allowsTrailingCommas: false, maximumDepth: 16
            ).read(bytes).root
            guard let members = root.objectMembers else {
                throw HTTPError(400, code: "badRequest", "the body must be a JSON object", context: "request body")
            }
            if let unknown = members.first(where: { !fields.contains($0.key) }) {
                throw HTTPError(
                    400, code: "unknownField", "unknown field \"\(unknown.key)\"", context: "request body",
                    hint: "the fields allowed: \(fields.sorted().joined(separator: ", "))")
            }
            return try then(JSONBody(root: root))
        } catch {
            return response(for: error, log: log)
        }
    }
}

/// Streams an upload's body into the repository.
///
/// The token that opened the request is checked again every ``recheckBytes`` bytes or
/// ``recheckInterval`` seconds while the body arrives, and before the upload ends: a token revoked
/// or rotated meanwhile gets 401, what arrived before stays (for a token that may continue), and
/// the version is not completed.
// Safe because: its two `var`s are touched only by the request's own calls (`receive`, `finish`, `abort`), which
// libmicrohttpd makes one at a time on the connection's thread or on the worker while the connection is suspended
// (see `RequestState`).
final class UploadReceiver: HTTPBodyReceiver, @unchecked Sendable {
    let api: ManagementAPI
    let upload: Upload
    let app: String, pack: String, number: Int
    /// The request's caller: the upload's end (and its audit entry) comes after the route returned.
    let caller = Caller.current
    let reauthorization: ManagementAPI.Reauthorization?
    /// Bytes taken since the token was last checked, and when it was.
    private var unchecked = 0
    private var checked = ContinuousClock.now

    /// How many bytes, and how many seconds, an upload goes on before its token is checked again.
    static let recheckBytes = 4 << 20
    static let recheckInterval: Duration = .seconds(5)

    init(
        api: ManagementAPI, upload: Upload, app: String, pack: String, number: Int,
        reauthorization: ManagementAPI.Reauthorization?
    ) {
        self.api = api
        self.upload = upload
        self.app = app
        self.pack = pack
        self.number = number
        self.reauthorization = reauthorization
    }

    /// The answer to `error`, with the upload ended first (without completing it).
    func refuse(_ error: any Error) -> HTTPResponse {
        _ = try? upload.close(completing: false)
        api.metrics?.recordUpload("refused")
        return ManagementAPI.response(for: error, log: api.repository.log)
    }

    /// A refusal while the body arrives, which the server answers as it is (with the API's headers here).
    func midBody(_ error: any Error) -> HTTPError {
        var r = refuse(error)
        r.headers += ManagementAPI.responseHeaders
        return HTTPError(response: r)
    }

    func receive(_ bytes: UnsafeRawBufferPointer) throws {
        if let reauthorization, unchecked >= Self.recheckBytes || ContinuousClock.now - checked >= Self.recheckInterval
        {
            do { _ = try reauthorization.check() } catch { throw midBody(error) }
            unchecked = 0
            checked = .now
        }
        do { try upload.append(bytes) } catch { throw midBody(error) }
        unchecked += bytes.count
    }

    func finish() -> HTTPResponse {
        // The token, checked once more before the upload may complete.
        let now: Caller?
        do { now = try reauthorization?.check() ?? caller } catch { return refuse(error) }
        return Caller.$current.withValue(now) { finishUpload() }
    }

    func finishUpload() -> HTTPResponse {
        do {
            let complete = try upload.close()
            api.metrics?.recordUpload(complete ? "completed" : "partial")
            let version = try api.repository.uploads.version(app: app, pack: pack, number: number)
            var r = HTTPResponse.json(complete ? 202 : 200, version.json.serialized())
            r.headers.append(("Upload-Offset", String(version.received)))
            return r
        } catch {
            return ManagementAPI.response(for: error, log: api.repository.log)
        }
    }

    func abort() {
        // A chunked body cut off after its last byte would complete the upload here: only for a token that still works.
        let allowed = reauthorization.map { (try? $0.check()) != nil } ?? true
        _ = try? upload.close(completing: allowed)
        api.metrics?.recordUpload("interrupted")
    }
}
