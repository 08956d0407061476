import BacklotBasics
import BacklotCatalog
import BacklotFormat
import BacklotHTTPServer
import BacklotJSON
import BacklotRepository
import Foundation

/// The routes the dashboard reads besides the release workflow: the audit trail, download
/// counts, the signing keys and catalog expiries, and who the caller is.
extension ManagementAPI {
    static let extraRoutes: [Route] = [
        Route(
            method: "GET", template: "/api/audit", role: .reader,
            doc: RouteDoc(
                "listAudit", tag: "audit", "The audit trail, newest first, one page at a time.",
                parameters: [
                    .init(query: "app", "Only this app's entries.", APISchemas.id),
                    .init(query: "action", "Only this action.", .string(enumeration: AuditLog.actions)),
                    .init(
                        query: "limit", "Entries per page (default 100).",
                        .integer(minimum: 1, maximum: Int64(AuditLog.pageLimit))),
                    .init(
                        query: "before", "Only entries older than this id: the next of the page before.",
                        APISchemas.positive),
                ],
                responses: [.init(200, "One page of entries.", .ref("AuditPage"))])
        ) { api, call in
            let query = call.request.query
            let app = try query["app"].map { text -> String in
                if let problem = PackID.problem(with: text) {
                    throw HTTPError(400, code: "badRequest", problem.message, context: "app")
                }
                return text
            }
            let limit = try query["limit"].map {
                try CheckedInteger.parse(
                    $0, as: Int.self, "the query parameter limit", in: 1...AuditLog.pageLimit, context: "limit")
            }
            let before = try query["before"].map {
                try CheckedInteger.parse(
                    $0, as: Int.self, "the query parameter before", in: 1...Int.max, context: "before")
            }
            let page = try api.repository.audit.entries(
                app: app, action: query["action"], limit: limit ?? 100, before: before)
            return .respond(
                .json(
                    200,
                    JSONNode.object([
                        "entries": .array(page.entries.map(\.json)), "next": page.next.map { .number($0) } ?? .null,
                    ]).serialized()))
        },
        Route(
            method: "GET", template: "/api/apps/{app}/downloads", role: .reader,
            doc: RouteDoc(
                "getDownloads", tag: "downloads",
                "Requests and bytes of the app's catalogs, pack archives and Apple manifests and packs, per UTC day (counted by the server, written every few seconds).",
                parameters: [
                    .init(
                        query: "days", "Days back from today, today included (default 30).",
                        .integer(minimum: 1, maximum: Int64(DownloadCounts.longestReport)))
                ],
                responses: [.init(200, "The counts.", .ref("Downloads"))])
        ) { api, call in
            let days = try call.request.query["days"].map {
                try CheckedInteger.parse(
                    $0, as: Int.self, "the query parameter days", in: 1...DownloadCounts.longestReport,
                    context: "days")
            }
            let app = call.parameter("app")
            let report = try api.repository.downloads.report(app: app, days: days ?? 30)
            return .respond(
                .json(
                    200,
                    JSONNode.object([
                        "app": .string(app), "from": .string(report.from), "to": .string(report.to),
                        "rows": .array(report.rows.map(\.json)),
                    ]).serialized()))
        },
        Route(
            method: "GET", template: "/api/keys", role: .reader,
            doc: RouteDoc(
                "getKeys", tag: "keys", "The signing key, the rotation history, and each catalog's expiry.",
                responses: [.init(200, "The keys and catalogs.", .ref("Keys"))])
        ) { api, _ in
            let keys = try api.repository.publication.signingKeys()
            guard let current = keys.first else {
                throw BacklotError(.io, "the repository has no signing key")
            }
            let catalogs = try api.repository.publication.catalogs().map { c in
                JSONNode.object([
                    "app": .string(c.app), "channel": .string(c.channel.rawValue), "version": .number(c.version),
                    "expires": .string(RFC3339.string(c.expires)),
                ])
            }
            return .respond(
                .json(
                    200,
                    JSONNode.object([
                        "current": .object([
                            "keyId": .string(current.keyID), "publicKey": .string(current.publicKey),
                            "since": .string(RFC3339.string(current.since)),
                        ]),
                        "history": .array(keys.map(\.json)), "catalogs": .array(catalogs),
                    ]).serialized()))
        },
        Route(
            method: "GET", template: "/api/whoami", role: .reader,
            doc: RouteDoc(
                "whoami", tag: "tokens", "The calling token: its id, label, role and expiry.",
                responses: [.init(200, "The caller.", .ref("WhoAmI"))])
        ) { api, call in
            guard let caller = call.caller else { throw BacklotError(.unauthorized, "this route needs a token") }
            let info = try api.repository.tokens.token(id: caller.id)
            return .respond(
                .json(
                    200,
                    JSONNode.object([
                        "tokenId": .number(info.id), "label": .string(info.label), "role": .string(info.role.rawValue),
                        "expires": info.expires.map { .string(RFC3339.string($0)) } ?? .null,
                    ]).serialized()))
        },
    ]
}
