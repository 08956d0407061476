import BacklotBasics
import BacklotFormat
import BacklotHTTPServer
import BacklotJSON
import BacklotProtocol
import BacklotRepository
import Foundation

/// The routes the dashboard reads besides the release workflow: the audit trail, download
/// counts, adoption (and the devices' reports it is made of), the signing keys and catalog
/// expiries, and who the caller is.
extension ManagementAPI {
    static let extraRoutes: [Route] = [
        Route(API.listAudit) { api, call in
            let query = try API.AuditQuery(call.request.query)
            let page = try api.repository.audit.entries(
                app: query.app, action: query.action, limit: query.limit ?? 100, before: query.before)
            return .respond(
                try json(200, API.AuditPage(entries: page.entries.map(API.AuditEntry.init), next: page.next)))
        },
        Route(API.getDownloads) { api, call in
            let days = try API.DownloadsQuery(call.request.query).days
            let app = call.parameter(.app)
            let report = try api.repository.downloads.report(app: app, days: days ?? 30)
            return .respond(
                try json(
                    200,
                    API.Downloads(
                        app: app, from: report.from, to: report.to, rows: report.rows.map(API.DownloadRow.init))))
        },
        Route(API.getAdoption) { api, call in
            let days = try API.DownloadsQuery(call.request.query).days
            return .respond(
                try json(
                    200,
                    API.Adoption(try api.repository.deviceReports.report(app: call.parameter(.app), days: days ?? 30))
                ))
        },
        Route(API.reportDevice) { api, call in
            body(API.DeviceReport.self) { b in
                let counted = try api.repository.deviceReports.add(DeviceReport(b), app: call.parameter(.app))
                return try json(200, API.ReportCounted(counted: counted))
            }
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
                        tokenId: info.id, label: info.label, role: info.role, person: info.person,
                        expires: info.expires.map(RFC3339.string))
                ))
        },
    ]
}
