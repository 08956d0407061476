import BacklotBasics
import BacklotFormat
import BacklotHTTPServer
import BacklotJSON
import BacklotProtocol
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

    /// One route: an endpoint of ``API/endpoints`` (method, path template, role, documentation)
    /// and the handler that answers it.
    public struct Route: Sendable {
        public let endpoint: any EndpointDescription
        let handle: @Sendable (ManagementAPI, Call) throws -> HTTPRoute

        init<Request, Response>(
            _ endpoint: Endpoint<Request, Response>,
            handle: @escaping @Sendable (ManagementAPI, Call) throws -> HTTPRoute
        ) {
            self.endpoint = endpoint
            self.handle = handle
        }

        public var method: String { endpoint.method }
        public var template: String { endpoint.template }
        public var role: Role? { endpoint.role }
        public var doc: EndpointDoc { endpoint.doc }
    }

    /// A matched call: parameters from the path, the request, and the caller (nil on a route that needs no token).
    struct Call: Sendable {
        let request: HTTPRequest
        let parameters: [API.PathParameter: String]
        let caller: Caller?
        func parameter(_ name: API.PathParameter) -> String { parameters[name] ?? "" }
        /// A whole-number path parameter (a version number, a request ID): 400 naming it and the range otherwise.
        func number(_ name: API.PathParameter) throws -> Int {
            try CheckedInteger.parse(
                parameter(name), as: Int.self, "the path parameter \(name.rawValue)", in: 1...Int.max,
                context: request.path)
        }
        /// A channel named in the path: 400 otherwise.
        func channel(_ name: API.PathParameter) throws -> Channel {
            guard let channel = Channel(rawValue: parameter(name)) else {
                throw BacklotError(.invalidInput, "the channel must be \(Channel.caseList)", context: name.rawValue)
            }
            return channel
        }
    }

    /// Every route of the API: one per endpoint of ``API/endpoints``, in its order (a test checks both).
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
        Route(API.getOpenAPI) { _, _ in
            .respond(
                HTTPResponse(
                    status: 200, headers: [("Content-Type", "application/json")], body: .bytes(OpenAPIDocument.bytes),
                    route: "api"))
        },
        Route(API.listApps) { api, _ in
            .respond(try json(200, API.AppList(apps: try api.repository.apps.list().map(API.App.init))))
        },
        Route(API.createApp) { api, _ in
            body(API.AppCreate.self) { b in
                try json(201, API.App(try api.repository.apps.create(b.id, fourEyes: b.fourEyes ?? false)))
            }
        },
        Route(API.changeApp) { api, call in
            body(API.AppChange.self) { b in
                let app = call.parameter(.app)
                var info = try api.repository.apps.app(app)
                if let on = b.fourEyes { info = try api.repository.apps.setFourEyes(app: app, on) }
                if let share = b.secondReviewerAbove {
                    info = try api.repository.apps.setSecondReviewer(app: app, above: share.percent)
                }
                return try json(200, API.App(info))
            }
        },
        Route(API.listPacks) { api, call in
            .respond(
                try json(
                    200,
                    API.PackList(packs: try api.repository.apps.packList(app: call.parameter(.app)).map(API.Pack.init))
                ))
        },
        Route(API.createPack) { api, call in
            body(API.PackCreate.self) { b in
                try api.repository.apps.createPack(app: call.parameter(.app), id: b.id)
                return try json(201, API.PackCreated(app: call.parameter(.app), id: b.id))
            }
        },
        Route(API.listVersions) { api, call in
            let list = try api.repository.uploads.versions(app: call.parameter(.app), pack: call.parameter(.pack))
            return .respond(try json(200, API.VersionList(versions: list.map(API.Version.init))))
        },
        Route(API.createVersion) { api, call in
            body(API.VersionCreate.self) { b in
                let app = call.parameter(.app)
                let pack = call.parameter(.pack)
                let size = try CheckedInteger.convert(
                    b.size, to: UInt64.self, "\"size\"", in: 1...API.Limits.largestByteCount, context: "request body")
                let (v, created) = try api.repository.uploads.openVersion(
                    app: app, pack: pack, size: size, format: b.format ?? .pack, manifest: b.manifest,
                    archiveSHA256: b.archiveSHA256, notes: b.notes)
                var r = try json(created ? 201 : 200, API.Version(v))
                if created {
                    r.headers.append(
                        ("Location", API.getVersion.path([.app: app, .pack: pack, .version: "\(v.number)"])))
                }
                return r
            }
        },
        Route(API.getVersion) { api, call in
            .respond(
                try json(
                    200,
                    API.Version(
                        try api.repository.uploads.version(
                            app: call.parameter(.app), pack: call.parameter(.pack), number: call.number(.version)))))
        },
        Route(API.deleteVersion) { api, call in
            try api.repository.uploads.deleteVersion(
                app: call.parameter(.app), pack: call.parameter(.pack), number: call.number(.version))
            return .respond(try json(200, API.Deleted()))
        },
        Route(API.uploadArchive) { api, call in
            let offset = try CheckedInteger.parse(
                call.request.header(API.uploadOffsetHeader) ?? "0", as: UInt64.self,
                "the \(API.uploadOffsetHeader) header",
                in: 0...API.Limits.largestByteCount, context: call.request.path)
            let app = call.parameter(.app)
            let pack = call.parameter(.pack)
            let number = try call.number(.version)
            // Only the token that created the version, or an admin, may upload its archive (403 otherwise).
            let upload = try api.repository.uploads.beginUpload(
                app: app, pack: pack, number: number, offset: offset, by: call.caller)
            // offset equals the bytes received, so it is at most the declared size: no overflow here.
            if let length = call.request.header("Content-Length").flatMap({ CheckedInteger.parse($0, as: UInt64.self) }
            ), length > upload.declared - offset {
                try upload.close()
                api.metrics?.recordUpload("refused")
                throw HTTPError(
                    413, code: .quotaExceeded,
                    "the upload of \(length) bytes from byte \(offset) would go past the \(upload.declared) bytes declared",
                    context: "\(app)/\(pack)/\(number)", hint: "send exactly the bytes the version still lacks")
            }
            return .receive(
                UploadReceiver(
                    api: api, upload: upload, app: app, pack: pack, number: number,
                    reauthorization: ManagementAPI.reauthorization))
        },
        Route(API.listReleases) { api, call in
            let query = try API.ReleaseQuery(call.request.query)
            let list = try api.repository.releases.requests(
                app: call.parameter(.app), channel: query.channel, status: query.status)
            return .respond(try json(200, API.ReleaseList(releases: list.map(API.ReleaseRequest.init))))
        },
        Route(API.createRelease) { api, call in
            body(API.ReleaseCreate.self) { b in
                let app = call.parameter(.app)
                // The same rule as a pack in the path: an invalid ID is 400, not "no such pack".
                if let problem = PackID.problem(with: b.pack) {
                    throw HTTPError(400, code: .badRequest, problem.message, context: "\"pack\"")
                }
                let version = try CheckedInteger.convert(
                    b.version, to: Int.self, "\"version\"", in: 1...Int.max, context: "request body")
                if let rollout = b.rollout, rollout.basisPoints == 0 {
                    throw API.RolloutShare.outOfRange("rollout", allowingZero: false)
                }
                let rollout = b.rollout?.percent
                if b.dryRun == true {
                    let plan = try api.repository.releases.plan(
                        app: app, pack: b.pack, version: version, channel: b.channel, rolloutPercent: rollout)
                    return try json(200, API.ReleaseOutcome(plan: API.ReleasePlan(plan)))
                }
                let request = try api.repository.releases.release(
                    app: app, pack: b.pack, version: version, channel: b.channel, rolloutPercent: rollout,
                    by: call.caller)
                if let request {
                    return try json(202, API.ReleaseOutcome(released: false, request: API.ReleaseRequest(request)))
                }
                return try json(200, API.ReleaseOutcome(released: true))
            }
        },
        Route(API.approveRelease) { api, call in
            let app = call.parameter(.app)
            let id = try call.number(.id)
            try api.repository.releases.approve(requestID: id, app: app, by: call.caller)
            return .respond(try json(200, API.ReleaseRequest(try api.repository.releases.request(id, app: app))))
        },
        Route(API.rejectRelease) { api, call in
            body(API.Rejection.self) { b in
                let app = call.parameter(.app)
                let id = try call.number(.id)
                guard b.reason.count <= API.Limits.longestReason else {
                    throw HTTPError(
                        400, code: .badRequest,
                        "a rejection's reason has at most \(API.Limits.longestReason) characters (this one has \(b.reason.count))",
                        context: "\"reason\"")
                }
                try api.repository.releases.reject(requestID: id, app: app, reason: b.reason, by: call.caller)
                return try json(200, API.ReleaseRequest(try api.repository.releases.request(id, app: app)))
            }
        },
        Route(API.getChannel) { api, call in
            .respond(
                try json(
                    200,
                    API.ChannelState(
                        try api.repository.releases.channelState(
                            app: call.parameter(.app), channel: call.channel(.channel)))))
        },
        Route(API.rollback) { api, call in
            body(API.RollbackRequest.self) { b in
                let version = try b.version.map {
                    try CheckedInteger.convert(
                        $0, to: Int.self, "\"version\"", in: 1...Int.max, context: "request body")
                }
                let pack = call.parameter(.pack)
                let live = try api.repository.releases.rollback(
                    app: call.parameter(.app), pack: pack, channel: b.channel, to: version)
                return try json(200, API.RolledBack(channel: b.channel, pack: pack, version: live))
            }
        },
        Route(API.rollout) { api, call in
            body(API.RolloutChange.self) { b in
                let app = call.parameter(.app)
                let pack = call.parameter(.pack)
                try api.repository.releases.setRollout(app: app, pack: pack, percent: b.percent.percent)
                let state = try api.repository.releases.channelState(app: app, channel: .production).packs.first {
                    $0.pack == pack
                }
                return try json(200, API.Rollout(channel: .production, pack: API.ChannelPack(state, pack: pack)))
            }
        },
        Route(API.setPhasedRollout) { api, call in
            body(API.PhasedRolloutRequest.self) { b in
                let phases = try api.repository.releases.setPhasedRollout(
                    app: call.parameter(.app), pack: call.parameter(.pack), steps: b.steps.map(\.basisPoints),
                    stepSeconds: b.stepSeconds, by: call.caller)
                return try json(200, API.PhasedRollout(phases))
            }
        },
        Route(API.getPhasedRollout) { api, call in
            let pack = call.parameter(.pack)
            guard let phases = try api.repository.releases.phasedRollout(app: call.parameter(.app), pack: pack) else {
                throw BacklotError(
                    .notFound, "this pack never had a phased rollout", context: pack,
                    hint: "set one: backlot releases phase APP PACK --steps 1,5,25,100 --every 1d")
            }
            return .respond(try json(200, API.PhasedRollout(phases)))
        },
        Route(API.withdraw) { api, call in
            body(API.WithdrawRequest.self) { b in
                try api.repository.releases.withdraw(
                    app: call.parameter(.app), pack: call.parameter(.pack), channel: b.channel)
                return try json(200, API.Withdrawn())
            }
        },
        Route(API.listTokens) { api, _ in
            .respond(try json(200, API.TokenList(tokens: try api.repository.tokens.list().map(API.Token.init))))
        },
        Route(API.createToken) { api, _ in
            body(API.TokenCreate.self) { b in
                let lifetime = try b.expiresInSeconds.map {
                    try CheckedInteger.convert(
                        $0, to: Int64.self, "\"expiresInSeconds\"",
                        in: API.Limits.shortestTokenLifetime...API.Limits.longestTokenLifetime, context: "request body")
                }
                // A token made for nobody named is its creator's (the caller the body's check found):
                // one person's tokens count as one for four-eyes.
                let token = try api.repository.tokens.issue(
                    role: b.role, person: b.person ?? Caller.current?.person, label: b.label ?? "", expiresIn: lifetime)
                return try json(201, API.IssuedToken(token))
            }
        },
        Route(API.revokeToken) { api, call in
            let info = try api.repository.tokens.revoke(id: try call.number(.id))
            return .respond(try json(200, API.Token(info)))
        },
        Route(API.rotateToken) { api, call in
            .respond(try json(201, API.IssuedToken(try api.repository.tokens.rotate(id: try call.number(.id)))))
        },
    ]

    /// `value` as the JSON body of an answer (`JSONEncoder`, sorted keys).
    /// - Throws: `EncodingError` for a value JSON cannot hold (a non-finite number).
    static func json(_ status: Int, _ value: some Encodable) throws -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return .json(status, String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    /// The largest JSON body a route buffers; a larger one gets 413 before it is read.
    public static let bodyLimit = API.Limits.bodyBytes

    /// Answers `/api/…` requests; nil for other paths.
    /// Headers on every answer of the API: no cache keeps it, no browser sniffs it for another type.
    public static let responseHeaders: [(name: String, value: String)] = [
        (name: "Cache-Control", value: "no-store"), (name: "X-Content-Type-Options", value: "nosniff"),
    ]

    public func route(_ request: HTTPRequest) -> HTTPRoute? {
        guard request.path == API.root || request.path.hasPrefix(API.pathPrefix) else { return nil }
        do {
            guard let segments = StaticTree.safeRelativePath(request.path)?.split(separator: "/").map(String.init)
            else {
                throw HTTPError(400, code: .badPath, "the path is not valid")
            }
            var pathMatched = false
            for route in Self.routes {
                guard let parameters = route.endpoint.match(segments) else { continue }
                pathMatched = true
                guard route.method == request.method else { continue }
                let caller = try route.role.map { try authorize(request, needs: $0) }
                for (name, value) in parameters where name == .app || name == .pack {
                    if let problem = PackID.problem(with: value) {
                        throw HTTPError(400, code: .badRequest, problem.message, context: name.rawValue)
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
                let allowed = Self.routes.filter { $0.endpoint.match(segments) != nil }.map(\.method).joined(
                    separator: ", ")
                var r = HTTPResponse.error(
                    405, code: .methodNotAllowed, "use \(allowed)", context: request.path, route: "api")
                r.headers.append(("Allow", allowed))
                return .respond(r)
            }
            throw HTTPError(
                404, code: .notFound, "no such API route", context: "\(request.method) \(request.path)",
                hint: "GET /api/openapi.json lists the routes")
        } catch {
            return .respond(Self.response(for: error, log: repository.log))
        }
    }

    /// A body of another type than the route reads is 415; a body without `Content-Type` is read as the route's type.
    static func checkContentType(_ request: HTTPRequest, for doc: EndpointDoc) throws {
        guard let expected = doc.body != nil ? "application/json" : doc.rawBody,
            let given = request.header("Content-Type")
        else { return }
        let media =
            given.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            ?? ""
        guard media == expected else {
            throw HTTPError(
                415, code: .unsupportedMediaType,
                "this route reads \(expected), not \(media.isEmpty ? "an empty type" : media)",
                context: "Content-Type", hint: "send Content-Type: \(expected)")
        }
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
                status, code: e.code, Self.withoutServerPaths(e.message),
                context: e.context.flatMap(Self.publicContext), hint: e.hint.map(Self.withoutServerPaths),
                route: "api")
            if status == 401 { r.headers.append(("WWW-Authenticate", "Bearer")) }
            // The database or the object store is unreachable: the instance recovers by itself.
            if status == 503 { r.headers.append(("Retry-After", String(ManagementAPI.unavailableRetryAfter))) }
            return r
        }
        log?("API answer 500: \(error)")
        return .error(
            500, code: .internal, "the server failed (an internal error; the server's log has the details)",
            route: "api")
    }

    /// Paths of this server's own URLs, which an answer may name (`GET /api/openapi.json`).
    static let urlPathPrefixes = [API.root, "/" + PublishedTreeLayout.root + "/", "/metrics", "/dashboard"]

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

    /// A JSON body of at most ``bodyLimit`` bytes, read as the endpoint's body type `T`
    /// (``RequestBodyDecoder``: only `T`'s members, each checked, 400 naming the one that is not).
    ///
    /// The body arrives later, outside the route's scope: the token is checked again once it has
    /// arrived and before anything is done (a token revoked or rotated while a client trickled
    /// the body in gets 401 and nothing is done), and that check's caller is the one the change
    /// is made and audited as. (The server also gives the body
    /// ``HTTPServer/Configuration/bufferedBodyDeadline`` seconds in all.)
    static func body<T: Decodable>(_ type: T.Type, _ then: @escaping @Sendable (T) throws -> HTTPResponse) -> HTTPRoute
    {
        let caller = Caller.current
        let check = reauthorization
        return .buffer(limit: bodyLimit) { bytes in
            let now: Caller?
            do { now = try check?.check() ?? caller } catch {
                return response(for: error, log: check?.api.repository.log)
            }
            return Caller.$current.withValue(now) {
                answer(bytes, as: T.self, log: check?.api.repository.log, then)
            }
        }
    }

    /// The answer to a buffered body: `then` of the body read as `T`, or the error's answer.
    static func answer<T: Decodable>(
        _ bytes: [UInt8], as type: T.Type, log: ((String) -> Void)? = nil, _ then: (T) throws -> HTTPResponse
    ) -> HTTPResponse {
        do {
            let root = try JSONReader(
                source: "request body", allowsComments: false, allowsTrailingCommas: false, maximumDepth: 16
            ).read(bytes).root
            return try then(try RequestBodyDecoder.decode(T.self, from: root))
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
// Tested: `ConnectionModelTests.slowUploadsOnMoreConnectionsThanPoolThreadsDoNotStarveASmallGet`.
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
            var r = try ManagementAPI.json(complete ? 202 : 200, API.Version(version))
            r.headers.append((API.uploadOffsetHeader, String(version.received)))
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
