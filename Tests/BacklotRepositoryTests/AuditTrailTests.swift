import BacklotBasics
import BacklotProtocol
import BacklotStore
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotRepository

/// The audit trail on SQLite and PostgreSQL: every change records exactly one entry, in its own
/// transaction, naming the token that made it (or the server); a change that fails records none;
/// pages go backwards by id with filters. Download counts add up per app, pack, version, kind and day.
@Suite(.serialized) struct AuditTrailTests {
    typealias Fixture = RepositoryTests.Fixture
    let app = "com.example.game"

    /// The entries after `since`, oldest first, as (action, actor label, actor role); `since` moves past them.
    func newEntries(_ repo: Repository, since: inout Int) throws -> [String] {
        let page = try repo.audit.entries(limit: AuditLog.pageLimit)
        let fresh = page.entries.filter { $0.id > since }.reversed()
        since = page.entries.first?.id ?? since
        return fresh.map { "\($0.action) \($0.actorLabel) \($0.actorRole)" }
    }

    func caller(_ repo: Repository, _ role: Role, _ label: String) throws -> Caller {
        try repo.tokens.authenticate(try repo.tokens.issue(role: role, label: label).token)
    }

    @Test(arguments: Backend.databases) func everyChangeRecordsOneEntryNamingItsActor(_ backend: Backend) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        let repo = f.repo
        var since = 0
        #expect(
            try newEntries(repo, since: &since).suffix(2) == [
                "app.create local system", "pack.create local system",
            ])
        let admin = try caller(repo, .admin, "ops")
        let uploader = try caller(repo, .uploader, "CI")
        let reviewer = try caller(repo, .reviewer, "release manager")
        #expect(try newEntries(repo, since: &since).count == 3, "three token.create entries")

        try Caller.$current.withValue(uploader) {
            #expect(try f.upload().state == .complete)
            #expect(
                try newEntries(repo, since: &since) == [
                    "version.create CI uploader", "version.uploaded CI uploader", "version.processed server system",
                ])
            let processed = try #require(try repo.audit.entries(action: "version.processed").entries.first)
            #expect(processed.app == app && processed.pack == "Levels" && processed.version == 1)
            #expect(processed.tokenID == nil)
            try repo.releases.release(app: app, pack: "Levels", version: 1, channel: .internal)
            #expect(try newEntries(repo, since: &since) == ["release.request CI uploader"])
        }
        let asked = try #require(
            try repo.releases.release(app: app, pack: "Levels", version: 1, channel: .production, by: uploader))
        try repo.releases.approve(requestID: asked.id, app: app, by: reviewer)
        let entries = try repo.audit.entries(limit: 2).entries
        #expect(entries.map(\.action) == ["release.approve", "release.request"])
        #expect(entries[0].tokenID == reviewer.id && entries[0].details["requestId"] == String(asked.id))
        #expect(entries[1].details == ["channel": "production", "requestId": String(asked.id), "status": "pending"])
        _ = try newEntries(repo, since: &since)

        // A rollout raised and dropped, a rejection, a withdrawal: each one entry by the reviewer.
        try Caller.$current.withValue(uploader) {
            let v = try f.upload(seed: 7)
            #expect(v.number == 2)
        }
        _ = try newEntries(repo, since: &since)
        let rollout = try #require(
            try repo.releases.release(
                app: app, pack: "Levels", version: 2, channel: .production, rolloutPercent: 10, by: uploader))
        try Caller.$current.withValue(reviewer) {
            try repo.releases.approve(requestID: rollout.id, app: app, by: reviewer)
            try repo.releases.setRollout(app: app, pack: "Levels", percent: 50)
            try repo.releases.rollback(app: app, pack: "Levels", channel: .production)
            try repo.releases.withdraw(app: app, pack: "Levels", channel: .internal)
        }
        #expect(
            try newEntries(repo, since: &since) == [
                "release.request CI uploader", "release.approve release manager reviewer",
                "rollout.set release manager reviewer", "rollback release manager reviewer",
                "withdraw release manager reviewer",
            ])
        let set = try #require(try repo.audit.entries(action: "rollout.set").entries.first)
        #expect(set.details == ["channel": "production", "percent": "50"] && set.version == 2)
        let rejected = try #require(
            try repo.releases.release(app: app, pack: "Levels", version: 2, channel: .external, by: uploader))
        try repo.releases.reject(requestID: rejected.id, app: app, reason: "not this week", by: reviewer)
        #expect(
            try newEntries(repo, since: &since) == [
                "release.request CI uploader", "release.reject release manager reviewer",
            ])
        #expect(try repo.audit.entries(action: "release.reject").entries.first?.details["reason"] == "not this week")

        // A failed processing is the server's; deletions, tokens, the app's rule and keys the admin's.
        try Caller.$current.withValue(uploader) {
            let v = try f.upload(corrupt: true)
            #expect(v.state == .failed)
        }
        #expect(
            try newEntries(repo, since: &since) == [
                "version.create CI uploader", "version.uploaded CI uploader", "version.failed server system",
            ])
        try Caller.$current.withValue(admin) {
            try repo.uploads.deleteVersion(app: app, pack: "Levels", number: 3)
            let reader = try repo.tokens.issue(role: .reader, label: "dashboard")
            _ = try repo.tokens.rotate(id: reader.id)
            try repo.tokens.revoke(id: reader.id)
            try repo.apps.setFourEyes(app: app, true)
        }
        #expect(
            try newEntries(repo, since: &since) == [
                "version.delete ops admin", "token.create ops admin", "token.rotate ops admin",
                "token.revoke ops admin", "app.update ops admin",
            ])
        #expect(try repo.audit.entries(action: "token.revoke").entries.first?.details["tokenLabel"] == "dashboard")
        try Caller.$current.withValue(admin) { _ = try repo.publication.rotateKey() }
        let rotation = try newEntries(repo, since: &since)
        #expect(rotation.last == "key.rotate ops admin")
        #expect(rotation.dropLast().allSatisfy { $0 == "catalog.resign ops admin" } && rotation.count >= 2)

        // The server's own work: re-signing and removing an abandoned upload.
        #expect(try repo.audit.lastResign() != nil)
        try repo.publication.resign(margin: .infinity)
        #expect(Set(try newEntries(repo, since: &since)) == ["catalog.resign server system"])
        _ = try repo.uploads.createVersion(app: app, pack: "Levels", size: 4096)
        _ = try newEntries(repo, since: &since)
        #expect(try repo.uploads.removeAbandoned(olderThan: 0, now: Date().addingTimeInterval(10)) == 1)
        #expect(try newEntries(repo, since: &since) == ["version.abandoned server system"])
    }

    @Test(arguments: Backend.databases) func aChangeThatFailsLeavesNoEntry(_ backend: Backend) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        let repo = f.repo
        var since = 0
        _ = try newEntries(repo, since: &since)
        let uploader = try caller(repo, .uploader, "CI")
        _ = try newEntries(repo, since: &since)
        #expect(throws: BacklotError.self) { try repo.apps.create(app) }
        #expect(throws: BacklotError.self) { try repo.apps.createPack(app: app, id: "Levels") }
        #expect(throws: BacklotError.self) { try repo.releases.setRollout(app: app, pack: "Levels", percent: 20) }
        #expect(throws: BacklotError.self) { try repo.releases.withdraw(app: app, pack: "Levels", channel: .external) }
        #expect(throws: BacklotError.self) { try repo.uploads.deleteVersion(app: app, pack: "Levels", number: 9) }
        // The last working admin token cannot be revoked.
        let admins = try repo.tokens.list().filter { $0.role == .admin }
        #expect(admins.count == 1)
        #expect(throws: BacklotError.self) { try repo.tokens.revoke(id: admins[0].id) }
        // Four eyes: the asker's approval is refused, and recorded nowhere.
        try repo.apps.setFourEyes(app: app, true)
        _ = try newEntries(repo, since: &since)
        #expect(try f.upload().state == .complete)
        let request = try #require(
            try repo.releases.release(app: app, pack: "Levels", version: 1, channel: .external, by: uploader))
        _ = try newEntries(repo, since: &since)
        #expect(throws: BacklotError.self) { try repo.releases.approve(requestID: request.id, app: app, by: uploader) }
        #expect(try newEntries(repo, since: &since).isEmpty)
        // An entry written in a transaction that then fails is rolled back with it.
        struct Late: Error {}
        #expect(throws: Late.self) {
            try repo.db.transaction { tx in
                try AuditLog.record(&tx, .appCreate, app: "com.example.never")
                try tx.run("INSERT INTO apps(id, created, four_eyes) VALUES ('com.example.never', 0, 0)")
                throw Late()
            }
        }
        #expect(try newEntries(repo, since: &since).isEmpty)
        #expect(throws: BacklotError.self) { try repo.apps.app("com.example.never") }
    }

    @Test(arguments: Backend.databases) func pagesGoBackwardsByIDWithFilters(_ backend: Backend) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        let repo = f.repo
        for i in 0..<7 { try repo.apps.createPack(app: app, id: "P\(i)") }
        try repo.apps.create("com.example.other")
        let all = try repo.audit.entries(limit: AuditLog.pageLimit).entries
        #expect(all.map(\.id) == all.map(\.id).sorted(by: >), "newest first")
        var seen: [Int] = []
        var page = try repo.audit.entries(app: app, action: "pack.create", limit: 3)
        seen += page.entries.map(\.id)
        #expect(page.entries.count == 3 && page.next == page.entries.last?.id)
        while let next = page.next {
            page = try repo.audit.entries(app: app, action: "pack.create", limit: 3, before: next)
            seen += page.entries.map(\.id)
        }
        let packs = all.filter { $0.action == "pack.create" && $0.app == app }
        #expect(seen == packs.map(\.id) && seen.count == 8, "P0…P6 and Levels, each once")
        #expect(try repo.audit.entries(app: "com.example.other").entries.map(\.action) == ["app.create"])
        #expect(try repo.audit.entries(limit: 8).next != nil)
        #expect(try repo.audit.entries(limit: all.count).next == nil)
        #expect(throws: BacklotError.self) { try repo.audit.entries(limit: 0) }
        #expect(throws: BacklotError.self) { try repo.audit.entries(limit: AuditLog.pageLimit + 1) }
        #expect(throws: BacklotError.self) { try repo.audit.entries(action: "app.explode") }
    }

    @Test(arguments: Backend.databases) func downloadsAddUpPerVersionKindAndDay(_ backend: Backend) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        let repo = f.repo
        let v = try f.upload()
        let sha = try #require(v.archiveSHA256)
        let now = Date()
        let today = DownloadCounts.utcDay(now)
        let yesterday = DownloadCounts.utcDay(now.addingTimeInterval(-86_400))
        try repo.downloads.add([
            DownloadHit(.catalog(app: app), day: today, requests: 3, bytes: 300),
            DownloadHit(.pack(archiveSHA256: sha), day: today, requests: 2, bytes: 2000),
            DownloadHit(.pack(archiveSHA256: sha), day: yesterday, requests: 1, bytes: 100),
            DownloadHit(.pack(archiveSHA256: String(repeating: "0", count: 64)), day: today, requests: 5, bytes: 5),
        ])
        try repo.downloads.add([DownloadHit(.catalog(app: app), day: today, requests: 1, bytes: 100)])
        let report = try repo.downloads.report(app: app, days: 2, now: now)
        #expect(report.from == yesterday && report.to == today)
        let rows = report.rows.map {
            "\($0.date) \($0.kind) \($0.pack ?? "-") \($0.version ?? 0) \($0.requests) \($0.bytes)"
        }
        #expect(
            rows == [
                "\(yesterday) pack Levels 1 1 100", "\(today) catalog - 0 4 400", "\(today) pack Levels 1 2 2000",
            ], "an archive no version has is not counted")
        #expect(try repo.downloads.report(app: app, days: 1, now: now).rows.count == 2)
        #expect(throws: BacklotError.self) { try repo.downloads.report(app: app, days: 0) }
        #expect(throws: BacklotError.self) { try repo.downloads.report(app: app, days: 91) }
        #expect(throws: BacklotError.self) { try repo.downloads.report(app: "com.example.none") }
        #expect(DownloadCounts.utcDay(Date(timeIntervalSince1970: 0)) == "1970-01-01")
        #expect(DownloadCounts.utcDay(daysSinceEpoch: 20_454) == "2026-01-01")
    }
}
