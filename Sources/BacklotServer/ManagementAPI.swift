import BacklotBasics
import BacklotFormat
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
        let handle: @Sendable (ManagementAPI, Call) throws -> HTTPRoute
    }

    /// A matched call: parameters from the path, the request, and the caller's role.
    struct Call: Sendable {
        let request: HTTPRequest
        let parameters: [String: String]
        func parameter(_ name: String) -> String { parameters[name] ?? "" }
        /// A whole-number path parameter (a version number, a request ID): 400 naming it and the range otherwise.
        func number(_ name: String) throws -> Int {
            try CheckedInteger.parse(parameter(name), as: Int.self, "the path parameter \(name)", in: 1...Int.max, context: request.path)
        }
    }

    /// Every route of the API.
    public static let routes: [Route] = [
        Route(method: "GET", template: "/api/openapi.json", role: nil) { _, _ in
            .respond(HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array(OpenAPIDocument.text.utf8)), route: "api"))
        },
        Route(method: "GET", template: "/api/apps", role: .reader) { api, _ in
            .respond(.json(200, JSONNode.object(["apps": .array(try api.repository.apps().map(JSONNode.string))]).serialized()))
        },
        Route(method: "POST", template: "/api/apps", role: .admin) { api, _ in
            body(fields: ["id"]) { b in
                let id = try b.string("id")
                try api.repository.createApp(id)
                return .json(201, JSONNode.object(["id": .string(id)]).serialized())
            }
        },
        Route(method: "GET", template: "/api/apps/{app}/packs", role: .reader) { api, call in
            .respond(.json(200, JSONNode.object(["packs": .array(try api.repository.packs(app: call.parameter("app")).map(JSONNode.string))]).serialized()))
        },
        Route(method: "POST", template: "/api/apps/{app}/packs", role: .uploader) { api, call in
            body(fields: ["id"]) { b in
                let id = try b.string("id")
                try api.repository.createPack(app: call.parameter("app"), id: id)
                return .json(201, JSONNode.object(["app": .string(call.parameter("app")), "id": .string(id)]).serialized())
            }
        },
        Route(method: "GET", template: "/api/apps/{app}/packs/{pack}/versions", role: .reader) { api, call in
            let list = try api.repository.versions(app: call.parameter("app"), pack: call.parameter("pack"))
            return .respond(.json(200, JSONNode.object(["versions": .array(list.map(\.json))]).serialized()))
        },
        Route(method: "POST", template: "/api/apps/{app}/packs/{pack}/versions", role: .uploader) { api, call in
            body(fields: ["size", "format", "manifest"]) { b in
                let formatText = b.root["format"]?.stringValue ?? "pack"
                guard let format = ArchiveFormat(rawValue: formatText) else {
                    throw HTTPError(400, code: "badRequest", "format must be pack or aar")
                }
                let v = try api.repository.createVersion(app: call.parameter("app"), pack: call.parameter("pack"), size: try b.integer("size", as: UInt64.self, in: 1...ManagementAPI.largestByteCount),
                                                         format: format, manifest: b.root["manifest"])
                return .json(201, v.json.serialized())
            }
        },
        Route(method: "GET", template: "/api/apps/{app}/packs/{pack}/versions/{version}", role: .reader) { api, call in
            .respond(.json(200, try api.repository.version(app: call.parameter("app"), pack: call.parameter("pack"), number: call.number("version")).json.serialized()))
        },
        Route(method: "DELETE", template: "/api/apps/{app}/packs/{pack}/versions/{version}", role: .admin) { api, call in
            try api.repository.deleteVersion(app: call.parameter("app"), pack: call.parameter("pack"), number: call.number("version"))
            return .respond(.json(200, "{\"deleted\":true}"))
        },
        Route(method: "PUT", template: "/api/apps/{app}/packs/{pack}/versions/{version}/archive", role: .uploader) { api, call in
            let offset = try CheckedInteger.parse(call.request.header("Upload-Offset") ?? "0", as: UInt64.self, "the Upload-Offset header",
                                                  in: 0...ManagementAPI.largestByteCount, context: call.request.path)
            let app = call.parameter("app"), pack = call.parameter("pack"), number = try call.number("version")
            let upload = try api.repository.beginUpload(app: app, pack: pack, number: number, offset: offset)
            // offset equals the bytes received, so it is at most the declared size: no overflow here.
            if let length = call.request.header("Content-Length").flatMap({ CheckedInteger.parse($0, as: UInt64.self) }), length > upload.declared - offset {
                try upload.close()
                api.metrics?.recordUpload("refused")
                throw HTTPError(413, code: "quotaExceeded", "the upload of \(length) bytes from byte \(offset) would go past the \(upload.declared) bytes declared")
            }
            return .receive(UploadReceiver(api: api, upload: upload, app: app, pack: pack, number: number))
        },
        Route(method: "GET", template: "/api/apps/{app}/releases", role: .reader) { api, call in
            .respond(.json(200, JSONNode.object(["releases": .array(try api.repository.releaseRequests(app: call.parameter("app")).map(\.json))]).serialized()))
        },
        Route(method: "POST", template: "/api/apps/{app}/releases", role: .uploader) { api, call in
            body(fields: ["pack", "version", "channel", "rollout"]) { b in
                guard let channel = Channel(rawValue: try b.string("channel")) else {
                    throw HTTPError(400, code: "badRequest", "channel must be internal, external or production")
                }
                let request = try api.repository.release(app: call.parameter("app"), pack: try b.string("pack"), version: try b.integer("version", as: Int.self, in: 1...Int.max),
                                                         channel: channel, rolloutPercent: try b.percent("rollout"))
                if let request { return .json(202, JSONNode.object(["released": .bool(false), "request": request.json]).serialized()) }
                return .json(200, JSONNode.object(["released": .bool(true)]).serialized())
            }
        },
        Route(method: "POST", template: "/api/apps/{app}/releases/{id}/approve", role: .reviewer) { api, call in
            let app = call.parameter("app"), id = try call.number("id")
            try api.repository.approve(requestID: id, app: app)
            return .respond(.json(200, try api.repository.releaseRequest(id, app: app).json.serialized()))
        },
        Route(method: "POST", template: "/api/apps/{app}/releases/{id}/reject", role: .reviewer) { api, call in
            body(fields: ["reason"]) { b in
                let app = call.parameter("app"), id = try call.number("id")
                try api.repository.reject(requestID: id, app: app, reason: try b.string("reason"))
                return .json(200, try api.repository.releaseRequest(id, app: app).json.serialized())
            }
        },
        Route(method: "POST", template: "/api/apps/{app}/packs/{pack}/rollback", role: .reviewer) { api, call in
            body(fields: ["channel", "version"]) { b in
                guard let channel = Channel(rawValue: try b.string("channel")) else { throw HTTPError(400, code: "badRequest", "unknown channel") }
                try api.repository.rollback(app: call.parameter("app"), pack: call.parameter("pack"), channel: channel,
                                            to: try b.integer("version", as: Int.self, in: 1...Int.max))
                return .json(200, "{\"rolledBack\":true}")
            }
        },
        Route(method: "POST", template: "/api/apps/{app}/packs/{pack}/rollout", role: .reviewer) { api, call in
            body(fields: ["percent"]) { b in
                guard let p = try b.percent("percent") else { throw HTTPError(400, code: "badRequest", "\"percent\" is required: a number above 0 and at most 100") }
                try api.repository.setRollout(app: call.parameter("app"), pack: call.parameter("pack"), percent: p)
                return .json(200, "{\"rollout\":\(p)}")
            }
        },
        Route(method: "POST", template: "/api/apps/{app}/packs/{pack}/withdraw", role: .reviewer) { api, call in
            body(fields: ["channel"]) { b in
                guard let channel = Channel(rawValue: try b.string("channel")) else { throw HTTPError(400, code: "badRequest", "unknown channel") }
                try api.repository.withdraw(app: call.parameter("app"), pack: call.parameter("pack"), channel: channel)
                return .json(200, "{\"withdrawn\":true}")
            }
        },
        Route(method: "POST", template: "/api/tokens", role: .admin) { api, _ in
            body(fields: ["role", "label"]) { b in
                guard let role = Role(rawValue: try b.string("role")) else {
                    throw HTTPError(400, code: "badRequest", "role must be admin, uploader, reviewer or reader")
                }
                let token = try api.repository.createToken(role: role, label: (try? b.string("label")) ?? "")
                return .json(201, JSONNode.object(["token": .string(token), "role": .string(role.rawValue)]).serialized())
            }
        },
    ]

    /// The largest byte count or offset the API accepts (what SQLite's 64-bit signed integers hold).
    static let largestByteCount = UInt64(Int64.max)

    /// The largest JSON body a route buffers; a larger one gets 413 before it is read.
    public static let bodyLimit = 64 << 10

    /// Answers `/api/…` requests; nil for other paths.
    public func route(_ request: HTTPRequest) -> HTTPRoute? {
        guard request.path == "/api" || request.path.hasPrefix("/api/") else { return nil }
        do {
            guard let segments = StaticTree.safeRelativePath(request.path)?.split(separator: "/").map(String.init) else {
                throw HTTPError(400, code: "badPath", "the path is not valid")
            }
            var pathMatched = false
            for route in Self.routes {
                guard let parameters = Self.match(route.template, segments) else { continue }
                pathMatched = true
                guard route.method == request.method else { continue }
                if let role = route.role { try authorize(request, needs: role) }
                for (name, value) in parameters where name == "app" || name == "pack" {
                    if let problem = PackID.problem(with: value) { throw HTTPError(400, code: "badRequest", "\(name): \(problem.message)") }
                }
                return try route.handle(self, Call(request: request, parameters: parameters))
            }
            if pathMatched {
                let allowed = Self.routes.filter { Self.match($0.template, segments) != nil }.map(\.method).joined(separator: ", ")
                var r = HTTPResponse.error(405, code: "methodNotAllowed", "use \(allowed)", route: "api")
                r.headers.append(("Allow", allowed))
                return .respond(r)
            }
            throw HTTPError(404, code: "notFound", "no such API route: \(request.method) \(request.path)")
        } catch {
            return .respond(Self.response(for: error))
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

    func authorize(_ request: HTTPRequest, needs role: Role) throws {
        guard let header = request.header("Authorization"), header.hasPrefix("Bearer ") else {
            throw HTTPError(401, code: "unauthorized", "this route needs a token: Authorization: Bearer TOKEN")
        }
        guard let have = try repository.role(ofToken: String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)) else {
            throw HTTPError(401, code: "unauthorized", "the token is not valid")
        }
        guard have.includes(role) else {
            throw HTTPError(403, code: "forbidden", "a \(have.rawValue) token cannot do this; it needs the \(role.rawValue) role")
        }
    }

    /// Maps errors to HTTP statuses with JSON bodies.
    /// Seconds a client is told to wait (`Retry-After`) while a backend cannot be reached.
    static let unavailableRetryAfter = 5

    static func response(for error: any Error) -> HTTPResponse {
        if let e = error as? HTTPError {
            var r = e.response
            r.route = "api"
            if r.status == 401 { r.headers.append(("WWW-Authenticate", "Bearer")) }
            return r
        }
        if let e = error as? BacklotError {
            let status = Self.status(for: e.code)
            let message = e.context.map { "\($0): \(e.message)" } ?? e.message
            var r = HTTPResponse.error(status, code: e.code.name, message + (e.hint.map { " (\($0))" } ?? ""), route: "api")
            // The database or the object store is unreachable: the instance recovers by itself.
            if status == 503 { r.headers.append(("Retry-After", String(ManagementAPI.unavailableRetryAfter))) }
            return r
        }
        return .error(500, code: "internal", "\(error)", route: "api")
    }

    /// The HTTP status of an error code. The database or the object store out of reach
    /// (`unavailable`, `transport`) is 503: the instance recovers by itself when they return.
    static func status(for code: BacklotError.Code) -> Int {
        switch code {
        case .notFound: 404
        case .conflict, .alreadyExists: 409
        case .forbidden: 403
        case .quotaExceeded: 413
        case .unavailable, .transport: 503
        case _ where code.isInvalidInput: 400
        default: 500
        }
    }

    /// A JSON body of at most ``bodyLimit`` bytes holding only `fields`.
    static func body(fields: Set<String>, _ then: @escaping @Sendable (JSONBody) throws -> HTTPResponse) -> HTTPRoute {
        .buffer(limit: bodyLimit) { bytes in
            do {
                let root = try JSONReader(source: "request body", allowsComments: false, allowsTrailingCommas: false, maximumDepth: 16).read(bytes).root
                guard let members = root.objectMembers else { throw HTTPError(400, code: "badRequest", "the body must be a JSON object") }
                if let unknown = members.first(where: { !fields.contains($0.key) }) {
                    throw HTTPError(400, code: "unknownField", "unknown field \"\(unknown.key)\"; allowed: \(fields.sorted().joined(separator: ", "))")
                }
                return try then(JSONBody(root: root))
            } catch {
                return response(for: error)
            }
        }
    }
}

/// Typed access to a request body's fields, with 400 errors naming them.
struct JSONBody {
    let root: JSONNode

    func string(_ key: String) throws -> String {
        guard let s = root[key]?.stringValue else { throw HTTPError(400, code: "badRequest", "\"\(key)\" must be a string") }
        return s
    }

    /// A whole number within `range`, through ``CheckedInteger`` (never a trap): a 400 naming the
    /// field and the range for a missing value, a string, a fraction, an exponent or a value outside it.
    func integer<T: FixedWidthInteger>(_ key: String, as type: T.Type, in range: ClosedRange<T>) throws -> T {
        guard case .number(let text)? = root[key]?.kind else {
            throw BacklotError(.invalidInput, "\"\(key)\" must be a whole number in \(range.lowerBound)…\(range.upperBound)", context: "request body",
                               hint: "give \"\(key)\" as a JSON number without a fraction or exponent")
        }
        return try CheckedInteger.parse(text, as: T.self, "\"\(key)\"", in: range, context: "request body")
    }

    /// An optional percentage: above 0 and at most 100, with at most two decimals that count (one
    /// basis point is 0.01 %); nil when absent or null.
    func percent(_ key: String) throws -> Double? {
        guard let node = root[key] else { return nil }
        if case .null = node.kind { return nil }
        guard case .number(let text) = node.kind, let d = Double(text), d.isFinite, d > 0, d <= 100, (d * 100).rounded() >= 1 else {
            throw BacklotError(.invalidInput, "\"\(key)\" must be a number above 0 and at most 100 (at least 0.01)", context: "request body",
                               hint: "give a percentage such as 25 or 12.5")
        }
        return d
    }
}

/// Streams an upload's body into the repository.
final class UploadReceiver: HTTPBodyReceiver, @unchecked Sendable {
    let api: ManagementAPI
    let upload: Upload
    let app: String, pack: String, number: Int

    init(api: ManagementAPI, upload: Upload, app: String, pack: String, number: Int) {
        self.api = api
        self.upload = upload
        self.app = app
        self.pack = pack
        self.number = number
    }

    func receive(_ bytes: UnsafeRawBufferPointer) throws {
        do { try upload.append(bytes) } catch let e as BacklotError {
            _ = try? upload.close()
            api.metrics?.recordUpload("refused")
            throw HTTPError(ManagementAPI.status(for: e.code), code: e.code.name, e.message)
        }
    }

    func finish() -> HTTPResponse {
        do {
            let complete = try upload.close()
            api.metrics?.recordUpload(complete ? "completed" : "partial")
            return .json(complete ? 202 : 200, try api.repository.version(app: app, pack: pack, number: number).json.serialized())
        } catch {
            return ManagementAPI.response(for: error)
        }
    }

    func abort() {
        _ = try? upload.close()
        api.metrics?.recordUpload("interrupted")
    }
}
