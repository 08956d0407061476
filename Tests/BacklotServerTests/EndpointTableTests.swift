import BacklotJSON
import BacklotProtocol
import Foundation
import Testing

@testable import BacklotServer

/// The management API has one definition, ``API``: the server's route table is its endpoints with
/// a handler each, the OpenAPI document lists exactly them, every answer and body type encodes to
/// the members its schema declares, and the dashboard calls only its paths and reads only its fields.
@Suite struct EndpointTableTests {
    static let document = try! JSONReader(source: "openapi").read(OpenAPIDocument.bytes).root

    @Test func theRouteTableIsTheEndpointListWithAHandlerEach() {
        let routes = ManagementAPI.routes.map { "\($0.method) \($0.template)" }
        let endpoints = API.endpoints.map { "\($0.method) \($0.template)" }
        #expect(routes == endpoints)
        #expect(Set(API.endpoints.map(\.operationID)).count == API.endpoints.count, "operation IDs are unique")
        #expect(Set(endpoints).count == endpoints.count, "no method and path twice")
    }

    @Test func theOpenAPIDocumentListsExactlyTheEndpoints() throws {
        let paths = try #require(Self.document["paths"]?.objectMembers)
        var listed: [String] = []
        for path in paths {
            for op in path.value.objectMembers ?? [] { listed.append("\(op.key.uppercased()) \(path.key)") }
        }
        #expect(listed.sorted() == API.endpoints.map { "\($0.method) \($0.template)" }.sorted())
    }

    @Test func aPathIsFilledInOneSegmentAPieceAndMatchedBack() throws {
        let path = API.getVersion.path([.app: "com.example.game", .pack: "Le vels/..", .version: "3"])
        #expect(path == "/api/apps/com.example.game/packs/Le%20vels%2F../versions/3")
        let segments = API.getVersion.path([.app: "a", .pack: "p", .version: "3"]).split(separator: "/").map(
            String.init)
        #expect(API.getVersion.match(segments) == [.app: "a", .pack: "p", .version: "3"])
        #expect(API.listVersions.match(segments) == nil)
    }

    /// Every `{name}` of every template is an `API.PathParameter`: the one spelling both the CLI's
    /// client and the server's routes use.
    @Test func everyTemplateParameterIsATypedPathParameter() {
        for endpoint in API.endpoints {
            for name in endpoint.parameterNames {
                #expect(API.PathParameter(rawValue: name) != nil, "\(endpoint.operationID): {\(name)}")
            }
        }
        let used = Set(API.endpoints.flatMap(\.parameterNames))
        #expect(used == Set(API.PathParameter.allCases.map(\.rawValue)), "a parameter no template names")
    }

    // MARK: the types and the schemas

    /// The schema `ref` names, with `$ref`s followed.
    static func schema(_ node: JSONNode?) -> JSONNode? {
        guard let ref = node?["$ref"]?.stringValue else { return node }
        return document["components"]?["schemas"]?[String(ref.split(separator: "/").last ?? "")]
    }

    /// Every way `node` may be (`anyOf`), flattened.
    static func shapes(_ node: JSONNode?) -> [JSONNode] {
        guard let node = schema(node) else { return [] }
        if let any = node["anyOf"]?.arrayElements { return any.flatMap { shapes($0) } }
        return [node]
    }

    /// The problems of `value` against the schema: members it has that no shape declares, members a
    /// shape requires that it lacks (checked for the shape whose members it has), recursively.
    static func problems(_ value: JSONNode, _ schema: JSONNode?, at path: String) -> [String] {
        let candidates = shapes(schema)
        guard !candidates.isEmpty else { return [] }
        if let members = value.objectMembers {
            let objects = candidates.filter { $0["properties"] != nil }
            guard !objects.isEmpty else { return [] }
            var best: [String]? = nil
            for shape in objects {
                var found: [String] = []
                let declared = Set(shape["properties"]?.objectMembers?.map(\.key) ?? [])
                for m in members where !declared.contains(m.key) { found.append("\(path).\(m.key): not declared") }
                for r in shape["required"]?.arrayElements ?? [] {
                    if let name = r.stringValue, !members.contains(where: { $0.key == name }) {
                        found.append("\(path).\(name): required, not written")
                    }
                }
                for m in members where declared.contains(m.key) {
                    found += problems(m.value, shape["properties"]?[m.key], at: "\(path).\(m.key)")
                }
                if best == nil || found.count < best!.count { best = found }
            }
            return best ?? []
        }
        if let elements = value.arrayElements {
            return elements.enumerated().flatMap { i, e in
                candidates.flatMap { problems(e, $0["items"], at: "\(path)[\(i)]") }
            }
        }
        return []
    }

    static func encoded(_ value: some Encodable) throws -> JSONNode {
        try JSONReader(source: "value").read(Array(try JSONEncoder().encode(value))).root
    }

    static let time = "2026-12-04T00:00:00Z"
    static let digest = String(repeating: "ab", count: 32)

    /// One value of every answer type, every optional member set (so that each is checked), and
    /// the schema the OpenAPI document gives it.
    static var answers: [(String, any Encodable)] {
        let request = API.ReleaseRequest(
            id: 1, app: "a", channel: .production, pack: "p", version: 2, rolloutPercent: 10, status: "approved",
            requested: time, requestedBy: .init(id: 1, label: "ci", person: "ci"), decided: time,
            decidedBy: .init(id: 2, label: "lead", person: "alice"), reason: "ok", notes: "Level 12")
        let pack = API.ChannelPack(
            pack: "p", live: .init(version: 1, archiveSHA256: digest), candidate: .init(version: 2, rolloutPercent: 5))
        let plan = API.ReleasePlan(
            needsApproval: true,
            change: .init(
                channel: .production, pack: "p", from: .init(version: 1, rolloutPercent: nil),
                to: .init(version: 2, rolloutPercent: 5), catalogVersion: 3))
        return [
            (
                "AppList",
                API.AppList(apps: [
                    .init(id: "a", created: time, fourEyes: true, quotaBytes: 1, secondReviewerAbove: 25)
                ])
            ),
            ("PackList", API.PackList(packs: [.init(id: "p", created: time, versions: 1, latest: 1)])),
            ("PackCreated", API.PackCreated(app: "a", id: "p")),
            (
                "VersionList",
                API.VersionList(versions: [
                    .init(
                        app: "a", pack: "p", version: 1, state: .failed, reason: "r", size: 10, received: 10,
                        archiveSHA256: digest, installSize: 20, format: .pack, notes: "Level 12")
                ])
            ),
            ("Deleted", API.Deleted()),
            ("ReleaseList", API.ReleaseList(releases: [request])),
            ("Released", API.ReleaseOutcome(released: true)),
            ("ReleaseRequested", API.ReleaseOutcome(released: false, request: request)),
            ("ReleasePlan", API.ReleaseOutcome(plan: plan)),
            (
                "ChannelState",
                API.ChannelState(
                    app: "a", channel: .production, catalogVersion: 3, expires: time, signingKey: digest, packs: [pack])
            ),
            ("Rollout", API.Rollout(channel: .production, pack: pack)),
            ("RolledBack", API.RolledBack(channel: .internal, pack: "p", version: 1)),
            ("Withdrawn", API.Withdrawn()),
            (
                "TokenList",
                API.TokenList(tokens: [
                    .init(
                        id: 1, label: "ci", role: .uploader, person: "ci", created: time, lastUsed: time, expires: time,
                        revoked: time
                    )
                ])
            ),
            (
                "IssuedToken",
                API.IssuedToken(
                    id: 1, token: "blt_" + String(repeating: "0", count: 64), role: .reader, label: "", person: "bob",
                    created: time,
                    expires: time)
            ),
            (
                "AuditPage",
                API.AuditPage(
                    entries: [
                        .init(
                            id: 1, time: time, actor: .init(tokenId: 1, label: "ci", role: "admin", person: "alice"),
                            app: "a",
                            pack: "p",
                            version: 1, action: "rollback", details: ["channel": "internal"])
                    ], next: 1)
            ),
            (
                "Downloads",
                API.Downloads(
                    app: "a", from: "2026-12-01", to: "2026-12-04",
                    rows: [.init(date: "2026-12-04", pack: "p", version: 1, kind: "pack", requests: 1, bytes: 2)])
            ),
            (
                "Keys",
                API.Keys(
                    current: .init(keyId: digest, publicKey: "k", since: time),
                    history: [.init(keyId: digest, publicKey: "k", since: time, retired: time)],
                    catalogs: [.init(app: "a", channel: .external, version: 1, expires: time)])
            ),
            ("WhoAmI", API.WhoAmI(tokenId: 1, label: "ci", role: .admin, person: "alice", expires: time)),
            (
                "Error",
                API.ErrorAnswer(error: .init(code: "notFound", message: "no such app", context: "a", hint: "h"))
            ),
        ]
    }

    /// One value of every body type, with every optional member set.
    static var bodies: [(String, any Encodable)] {
        [
            ("AppCreate", API.AppCreate(id: "a", fourEyes: true)),
            ("AppChange", API.AppChange(fourEyes: false, secondReviewerAbove: .init(percent: 25))),
            ("PackCreate", API.PackCreate(id: "p")),
            ("VersionCreate", API.VersionCreate(size: 100, format: .pack, archiveSHA256: digest, notes: "Level 12")),
            (
                "ReleaseCreate",
                API.ReleaseCreate(
                    pack: "p", version: 1, channel: .production, rollout: .init(percent: 5), dryRun: true)
            ),
            ("Rejection", API.Rejection(reason: "no")),
            ("RolloutChange", API.RolloutChange(percent: .init(percent: 50))),
            ("RollbackRequest", API.RollbackRequest(channel: .internal, version: 1)),
            ("WithdrawRequest", API.WithdrawRequest(channel: .external)),
            ("TokenCreate", API.TokenCreate(role: .reader, person: "bob", label: "ci", expiresInSeconds: 60)),
        ]
    }

    @Test func everyAnswerAndBodyTypeWritesExactlyTheMembersItsSchemaDeclares() throws {
        let schemas = try #require(Self.document["components"]?["schemas"])
        for (name, value) in Self.answers + Self.bodies {
            let schema = try #require(schemas[name], "\(name) is not a schema of the document")
            let problems = Self.problems(try Self.encoded(value), schema, at: name)
            #expect(problems.isEmpty, "\(problems)")
        }
        // And each member a schema declares is written by its type (nothing declared and never sent).
        for (name, value) in Self.answers + Self.bodies {
            guard let shapes = Optional(Self.shapes(schemas[name])), shapes.count == 1,
                let declared = shapes[0]["properties"]?.objectMembers?.map(\.key)
            else { continue }
            let written = Set(try Self.encoded(value).objectMembers?.map(\.key) ?? [])
            #expect(Set(declared).subtracting(written).isEmpty, "\(name): \(Set(declared).subtracting(written))")
        }
    }

    @Test func everyEndpointsTypesAreThoseItsDocumentNames() throws {
        // The schema each endpoint's body and 2xx answers name exist among the document's schemas.
        let schemas = Set(Self.document["components"]?["schemas"]?.objectMembers?.map(\.key) ?? [])
        for endpoint in API.endpoints {
            for r in endpoint.doc.responses where (200..<300).contains(r.status) {
                let text = String(decoding: try JSONEncoder().encode(r.schema), as: UTF8.self)
                for ref in text.components(separatedBy: "#/components/schemas/").dropFirst() {
                    let name = String(ref.prefix { $0 != "\"" })
                    #expect(schemas.contains(name), "\(endpoint.operationID): \(name)")
                }
            }
        }
    }

    /// The schema of an endpoint's body and of its 2xx answers are those of the types it is
    /// declared with (`Endpoint<Request, Response>`): a body or an answer type changed without its
    /// documented schema, or the other way round, fails here.
    @Test func everyEndpointsDocumentNamesTheSchemasOfItsTypes() throws {
        func names(_ type: Any.Type) -> Set<String> {
            if type == NoBody.self { return [] }
            if type == API.ReleaseOutcome.self { return ["Released", "ReleaseRequested", "ReleasePlan"] }
            if let derived = APISchemas.derivedTypes.first(where: { $0.type == type }) { return [derived.name] }
            let name = "\(type)".split(separator: ".").last.map(String.init) ?? ""
            return APISchemas.handWritten[name] == nil ? [] : [name]
        }
        func reference(_ schema: JSONSchema?) throws -> String? {
            guard let schema else { return nil }
            let node = try Self.encoded(schema)
            return node["$ref"]?.stringValue?.split(separator: "/").last.map(String.init)
        }
        var checked = 0
        for endpoint in API.endpoints {
            let body = try reference(endpoint.doc.body)
            if endpoint.bodyType == NoBody.self {
                #expect(body == nil, "\(endpoint.operationID) takes no JSON body but documents \(body ?? "")")
            } else {
                #expect(
                    body.map { names(endpoint.bodyType).contains($0) } == true,
                    "\(endpoint.operationID): body \(endpoint.bodyType) documented as \(body ?? "nothing")")
                checked += 1
            }
            for r in endpoint.doc.responses where (200..<300).contains(r.status) {
                guard let answer = try reference(r.schema) else { continue }
                #expect(
                    names(endpoint.answerType).contains(answer),
                    "\(endpoint.operationID) \(r.status): answer \(endpoint.answerType) documented as \(answer)")
                checked += 1
            }
        }
        #expect(checked > 40, "\(checked) bodies and answers checked")
    }

    // MARK: the dashboard

    /// Names dashboard.js reads after a '.' that belong to the browser or to the page itself, not
    /// to an answer of the API. A name the page reads that is neither here nor a member of an API
    /// schema fails the test: an API field renamed or misspelt in the page is caught here.
    static let browserNames: Set<String> = [
        "Authorization", "addEventListener", "all", "append", "body", "ceil", "children", "className", "clipboard",
        "confirm", "createElement", "createElementNS", "createTextNode", "dataset", "filter", "find", "flat", "focus",
        "forEach", "fromEntries", "getElementById", "getItem", "getTime", "hash", "hidden", "includes", "isFinite",
        "isNaN", "join", "keys", "length", "map", "max", "min", "now", "ok", "parse", "preventDefault", "probed",
        "production", "push", "querySelector", "querySelectorAll", "reduce", "refused", "removeAttribute", "removeItem",
        "renderId", "replaceChildren", "replaceWith", "select", "set", "setAttribute", "setItem", "slice", "some",
        "statusText", "stringify", "target", "test", "text", "textContent", "timer", "toFixed", "toISOString", "trim",
        "value", "values", "who", "paddingLeft", "paddingRight", "floor", "clientWidth", "round", "get", "assign",
        "share", "flatMap",
    ]

    /// Every member name of every schema of the document.
    static var apiFields: Set<String> {
        var names: Set<String> = []
        func walk(_ node: JSONNode) {
            if let properties = node["properties"]?.objectMembers { names.formUnion(properties.map(\.key)) }
            for m in node.objectMembers ?? [] { walk(m.value) }
            for e in node.arrayElements ?? [] { walk(e) }
        }
        if let schemas = document["components"]?["schemas"] { walk(schemas) }
        return names
    }

    static let dashboard = String(decoding: PackageResources.dashboard_js, as: UTF8.self)

    @Test func theDashboardReadsOnlyFieldsTheOpenAPIDocumentDeclares() throws {
        let regex = try NSRegularExpression(
            pattern: #"(?<![A-Za-z0-9_$])[A-Za-z_$][A-Za-z0-9_$]*\.([A-Za-z_][A-Za-z0-9_]*)"#)
        // Code only: what strings and comments say ('rollout.set', "e.g.") is not a read.
        let code = Self.codeOnly(Self.dashboard)
        var read: Set<String> = []
        for match in regex.matches(in: code, range: NSRange(code.startIndex..., in: code)) {
            if let r = Range(match.range(at: 1), in: code) { read.insert(String(code[r])) }
        }
        let text = Self.dashboard
        let unknown = read.subtracting(Self.apiFields).subtracting(Self.browserNames)
        #expect(unknown.isEmpty, "dashboard.js reads \(unknown.sorted()), which no API schema declares")
        // A field read by name in brackets (`x['name']`) is held to the same rule, bar headers.
        let bracket = try NSRegularExpression(pattern: #"\[['"]([A-Za-z_][A-Za-z0-9_]*)['"]\]"#)
        var bracketRead: Set<String> = []
        for match in bracket.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            if let r = Range(match.range(at: 1), in: text) { bracketRead.insert(String(text[r])) }
        }
        let unknownInBrackets = bracketRead.subtracting(Self.apiFields).subtracting(Self.browserNames)
        #expect(unknownInBrackets.isEmpty, "dashboard.js reads \(unknownInBrackets.sorted()) in brackets")
        // The allowance is for names the API does not send: one it does send is held to the API's
        // schemas alone, so renaming it there fails here.
        let shadowed = Self.browserNames.intersection(Self.apiFields)
        #expect(shadowed.isEmpty, "browserNames holds API fields \(shadowed.sorted()): remove them from it")
        let stale = Self.browserNames.subtracting(read).subtracting(bracketRead)
        #expect(stale.isEmpty, "browserNames holds \(stale.sorted()), which the page no longer reads: remove them")
        // What the API sends that the page relies on is there (the list is not empty by accident).
        #expect(read.intersection(Self.apiFields).isSuperset(of: ["rolloutPercent", "archiveSHA256", "requestedBy"]))
    }

    /// JavaScript with the text of its strings and comments blanked: what is left is code, and the
    /// code inside a template literal's `${…}`.
    static func codeOnly(_ js: String) -> String {
        enum State { case code, single, double, template, line, block }
        var out = ""
        var stack: [State] = [.code]  // a `${` inside a template literal pushes code; its `}` pops
        var braces: [Int] = [0]  // open `{` of each code level, so that only the `}` ending `${` pops
        let chars = Array(js)
        var i = 0
        while i < chars.count {
            let c = chars[i]
            let next = i + 1 < chars.count ? chars[i + 1] : "\0"
            switch stack.last ?? .code {
            case .code:
                if c == "/" && next == "/" {
                    stack.append(.line)
                } else if c == "/" && next == "*" {
                    stack.append(.block)
                } else if c == "'" {
                    stack.append(.single)
                } else if c == "\"" {
                    stack.append(.double)
                } else if c == "`" {
                    stack.append(.template)
                } else if c == "{" {
                    braces[braces.count - 1] += 1
                } else if c == "}" && braces.last == 0 && stack.count > 1 {
                    stack.removeLast()
                    braces.removeLast()
                } else if c == "}" {
                    braces[braces.count - 1] -= 1
                }
                out.append(c)
            case .single, .double:
                if c == "\\" {
                    i += 1
                } else if c == (stack.last == .single ? "'" : "\"") || c == "\n" {
                    stack.removeLast()
                }
                out.append(c == "\n" ? "\n" : " ")
            case .template:
                if c == "\\" {
                    i += 1
                } else if c == "`" {
                    stack.removeLast()
                } else if c == "$" && next == "{" {
                    stack.append(.code)
                    braces.append(0)
                    i += 1
                }
                out.append(c == "\n" ? "\n" : " ")
            case .line:
                if c == "\n" { stack.removeLast() }
                out.append(c == "\n" ? "\n" : " ")
            case .block:
                if c == "*" && next == "/" {
                    stack.removeLast()
                    i += 1
                }
                out.append(c == "\n" ? "\n" : " ")
            }
            i += 1
        }
        return out
    }

    /// The lists the page offers (audit actions, channels, roles) are the API's, both ways.
    @Test func theDashboardsListsAreTheAPIs() throws {
        func list(_ name: String) throws -> [String] {
            let regex = try NSRegularExpression(pattern: "const \(name) = \\[([^\\]]*)\\]")
            let text = Self.dashboard
            guard let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
                let r = Range(match.range(at: 1), in: text)
            else { return [] }
            return text[r].split(separator: ",").map {
                $0.trimmingCharacters(in: CharacterSet(charactersIn: " \n'"))
            }.filter { !$0.isEmpty }
        }
        #expect(try Set(list("ACTIONS")) == Set(API.auditActions))
        #expect(try list("CHANNELS") == Channel.allCases.map(\.rawValue))
        let roles = try NSRegularExpression(pattern: #"\[('reader'[^\]]*)\]\.map"#)
        let text = Self.dashboard
        let match = try #require(roles.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)))
        let range = try #require(Range(match.range(at: 1), in: text))
        let offered = text[range].split(separator: ",").map {
            $0.trimmingCharacters(in: CharacterSet(charactersIn: " '"))
        }
        #expect(Set(offered) == Set(Role.allCases.map(\.rawValue)))
    }

    @Test func theDashboardCallsOnlyPathsOfTheEndpointList() throws {
        // `api('METHOD', '/api/…')` and `api('METHOD', `/api/…${x}…`)`: each placeholder is one segment.
        let regex = try NSRegularExpression(pattern: #"api\('([A-Z]+)', [`']([^`']+)[`']"#)
        let text = Self.dashboard
        var calls = 0
        for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            guard let m = Range(match.range(at: 1), in: text), let p = Range(match.range(at: 2), in: text) else {
                continue
            }
            let method = String(text[m])
            // A placeholder inside a segment (`releases${query}`) is a query string; one alone is a segment.
            var path = String(text[p]).replacingOccurrences(
                of: #"(?<=[^/])\$\{[^}]*\}"#, with: "", options: .regularExpression)
            path = String(path.prefix { $0 != "?" })
            let segments = path.split(separator: "/").map(String.init)
            // A placeholder segment stands for a parameter or for a literal chosen at run time (`${verb}`).
            let found = API.endpoints.contains { e in
                let parts = e.template.split(separator: "/").map(String.init)
                return e.method == method && parts.count == segments.count
                    && zip(parts, segments).allSatisfy { part, segment in
                        segment.hasPrefix("${") || part.hasPrefix("{") && !segment.contains("/") || part == segment
                    }
            }
            #expect(found, "dashboard.js calls \(method) \(text[p]), which is no endpoint of API")
            calls += 1
        }
        #expect(calls >= 15, "the page's calls were found (\(calls))")
    }
}
