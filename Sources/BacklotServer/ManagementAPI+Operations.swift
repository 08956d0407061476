import BacklotBasics
import BacklotFormat
import BacklotHTTPServer
import BacklotJSON
import BacklotProtocol
import BacklotRepository
import Foundation

/// The routes the dashboard reads besides the release workflow: the audit trail, download
/// counts, the signing keys and catalog expiries, and who the caller is.
extension ManagementAPI {
    static let extraRoutes: [Route] = [
        Route(API.listAudit) { api, call in
            let query = call.request.query
            let app = try query["app"].map { text -> String in
                if let problem = PackID.problem(with: text) {
                    throw HTTPError(400, code: "badRequest", problem.message, context: "app")
                }
                return text
            }
            let limit = try query["limit"].map {
                try CheckedInteger.parse(
                    $0, as: Int.self, "the query parameter limit", in: 1...API.Limits.auditPageLimit, context: "limit")
            }
            let before = try query["before"].map {
                try CheckedInteger.parse(
                    $0, as: Int.self, "the query parameter before", in: 1...Int.max, context: "before")
            }
            let page = try api.repository.audit.entries(
                app: app, action: query["action"], limit: limit ?? 100, before: before)
            return .respond(
                try json(200, API.AuditPage(entries: page.entries.map(API.AuditEntry.init), next: page.next)))
        },
        Route(API.getDownloads) { api, call in
            let days = try call.request.query["days"].map {
                try CheckedInteger.parse(
                    $0, as: Int.self, "the query parameter days", in: 1...API.Limits.longestDownloadReport,
                    context: "days")
            }
            let app = call.parameter("app")
            let report = try api.repository.downloads.report(app: app, days: days ?? 30)
            return .respond(
                try json(
                    200,
                    API.Downloads(
                        app: app, from: report.from, to: report.to, rows: report.rows.map(API.DownloadRow.init))))
        },
        Route(API.getKeys) { api, _ in
            let keys = try api.repository.publication.signingKeys()
            guard let current = keys.first else {
                throw BacklotError(.io, "the repository has no signing key")
            }
            let catalogs = try api.repository.publication.catalogs().map { c in
                API.Keys.CatalogExpiry(
                    app: c.app, channel: c.channel, version: c.version, expires: RFC3339.string(c.expires))
            }
            let answer = API.Keys(
                current: .init(
                    keyId: current.keyID, publicKey: current.publicKey, since: RFC3339.string(current.since)),
                history: keys.map(API.SigningKey.init), catalogs: catalogs)
            return .respond(try json(200, answer))
        },
        Route(API.whoami) { api, call in
            guard let caller = call.caller else { throw BacklotError(.unauthorized, "this route needs a token") }
            let info = try api.repository.tokens.token(id: caller.id)
            return .respond(
                try json(
                    200,
                    API.WhoAmI(
                        tokenId: info.id, label: info.label, role: info.role, expires: info.expires.map(RFC3339.string))
                ))
        },
    ]
}
