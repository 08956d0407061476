import BacklotBasics
import BacklotProtocol
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotRepository

/// Devices' reports added up without identifiers, a phased rollout that moves on by itself and
/// halts when the candidate fails more often than the live version, and an archive two apps
/// share credited to the app whose device downloaded it; on SQLite and PostgreSQL.
@Suite(.serialized) struct DeviceReportsTests {
    typealias Fixture = RepositoryTests.Fixture
    let app = "com.example.game"

    func code(_ error: any Error) -> String { (error as? BacklotError)?.code.name ?? "\(error)" }

    func held(_ versions: Int...) -> [DeviceReport.Release] {
        versions.map { DeviceReport.Release(pack: "Levels", version: $0) }
    }

    @Test(arguments: Backend.databases) func devicesAreCountedOnceADayAndMovedWhenTheyUpdate(_ backend: Backend) throws
    {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        _ = try f.upload(seed: 1)
        _ = try f.upload(seed: 2)
        let now = Date()
        // 12 devices on version 1, then 4 of them update to 2 the same day, one reports twice.
        for _ in 0..<12 {
            try f.repo.deviceReports.add(.init(channel: .production, held: held(1)), app: app, now: now)
        }
        for _ in 0..<4 {
            try f.repo.deviceReports.add(
                .init(
                    channel: .production, held: held(2), earlierToday: held(1),
                    installs: [.init(pack: "Levels", version: 2, started: 1, finished: 1)]), app: app, now: now)
        }
        // Only installs, no census: nobody is counted again.
        try f.repo.deviceReports.add(
            .init(channel: .production, installs: [.init(pack: "Levels", version: 2, started: 1, failed: 1)]), app: app,
            now: now)
        // Unknown packs and versions are not counted (a device cannot add rows at will).
        let counted = try f.repo.deviceReports.add(
            .init(
                channel: .production, held: [.init(pack: "Nope", version: 1), .init(pack: "Levels", version: 9)]),
            app: app, now: now)
        #expect(counted == 0)
        let raw = try f.repo.db.transaction { tx in
            try tx.query("SELECT * FROM device_reports ORDER BY pack, version", [])
        }
        let figures = raw.map { r in
            "\(r["pack"]?.string ?? "?") \(r["version"]?.int ?? -1): \(r["devices"]?.int ?? -1) \(r["started"]?.int ?? -1)/\(r["finished"]?.int ?? -1)/\(r["failed"]?.int ?? -1)"
        }
        #expect(figures == [" 0: 13 0/0/0", "Levels 1: 8 0/0/0", "Levels 2: 4 5/4/1"], "\(figures)")
        // Nothing stored can name a device: the table's columns are the aggregate's.
        #expect(
            Set(raw.first?.keys.map { $0 } ?? [])
                == ["app", "channel", "day", "pack", "version", "devices", "started", "finished", "failed"])

        // Figures below 10 are not shown.
        let report = try f.repo.deviceReports.report(app: app, days: 1, now: now)
        #expect(report.threshold == 10)
        let rows = report.rows.map { "\($0.pack ?? "-") \($0.version ?? 0) \($0.devices.map(String.init) ?? "<10")" }
        #expect(rows == ["- 0 13", "Levels 1 <10", "Levels 2 <10"], "\(rows)")
        #expect(report.rows.allSatisfy { $0.started == nil && $0.failed == nil })

        // Kept 400 days, then deleted.
        #expect(try f.repo.deviceReports.removeExpired(now: now.addingTimeInterval(400 * 86_400)) == 0)
        let next = now.addingTimeInterval(401 * 86_400)
        try f.repo.deviceReports.add(.init(channel: .production, held: held(1)), app: app, now: next)
        #expect(try f.repo.deviceReports.removeExpired(now: next) == 3)
        #expect(try f.repo.deviceReports.report(app: app, days: 1, now: next).rows.count == 2)

        // Bounds: too many entries, counts out of range, a bad pack ID.
        let many = Array(
            repeating: DeviceReport.Release(pack: "Levels", version: 1), count: API.Limits.reportEntries + 1)
        #expect { try f.repo.deviceReports.add(.init(channel: .production, held: many), app: app) } throws: {
            code($0) == "invalidInput" && "\($0)".contains("\"held\"")
        }
        #expect {
            try f.repo.deviceReports.add(
                .init(channel: .production, installs: [.init(pack: "Levels", version: 1, failed: 1001)]), app: app)
        } throws: { code($0) == "invalidInput" && "\($0)".contains("\"failed\"") }
        #expect {
            try f.repo.deviceReports.add(.init(channel: .production, held: [.init(pack: "../x", version: 1)]), app: app)
        } throws: { code($0) == "invalidInput" }
        #expect { try f.repo.deviceReports.add(.init(channel: .production), app: "com.example.other") } throws: {
            code($0) == "notFound"
        }
    }

    /// Releases version 1 to every device on production and version 2 as a 1 % candidate.
    func stage(_ f: Fixture) throws {
        _ = try f.upload(seed: 1)
        _ = try f.upload(seed: 2)
        try f.repo.releases.approve(
            requestID: try #require(
                try f.repo.releases.release(app: app, pack: "Levels", version: 1, channel: .production)
            ).id)
        try f.repo.releases.approve(
            requestID: try #require(
                try f.repo.releases.release(
                    app: app, pack: "Levels", version: 2, channel: .production, rolloutPercent: 1)
            ).id)
    }

    func share(_ f: Fixture) throws -> Int? {
        let pack = try f.repo.releases.channelState(app: app, channel: .production).packs.first
        guard let pack, pack.candidateVersion != nil else { return nil }
        return pack.candidatePercent.map { Int(($0 * 100).rounded()) }
    }

    @Test(arguments: Backend.databases) func aPhasedRolloutStepsOnAndHaltsWhenTheCandidateFailsMore(
        _ backend: Backend
    ) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        try stage(f)
        let start = Date()
        let phases = try f.repo.releases.setPhasedRollout(
            app: app, pack: "Levels", steps: [100, 500, 2500, 10_000], stepSeconds: 3600, now: start)
        #expect(phases.state == "running" && phases.step == 0 && phases.version == 2)
        #expect(try share(f) == 100)
        // Bounds: too many steps, too short a step.
        #expect {
            try f.repo.releases.setPhasedRollout(app: app, pack: "Levels", steps: Array(1...11), stepSeconds: 3600)
        } throws: { code($0) == "invalidInput" }
        #expect {
            try f.repo.releases.setPhasedRollout(app: app, pack: "Levels", steps: [100], stepSeconds: 59)
        } throws: { code($0) == "invalidInput" }

        // Before the step's time: nothing moves. After it: the next step, published.
        #expect(try f.repo.releases.advancePhasedRollouts(now: start.addingTimeInterval(3599)).isEmpty)
        #expect(try share(f) == 100)
        let lines = try f.repo.releases.advancePhasedRollouts(now: start.addingTimeInterval(3601))
        #expect(lines.count == 1 && lines[0].contains("5 %"), "\(lines)")
        #expect(try share(f) == 500)
        let published = try f.catalog(.production).packs[0]
        #expect(published.candidate?.version == 2 && published.rolloutBasisPoints == 500)

        // The live version fails 1 of 100 installs; the candidate 1 of 50: a higher rate halts it.
        try f.repo.deviceReports.add(
            .init(
                channel: .production,
                installs: [.init(pack: "Levels", version: 1, started: 100, finished: 99, failed: 1)]),
            app: app)
        try f.repo.deviceReports.add(
            .init(channel: .production, installs: [.init(pack: "Levels", version: 2, started: 100, finished: 100)]),
            app: app)
        #expect(try f.repo.releases.advancePhasedRollouts(now: start.addingTimeInterval(3700)).isEmpty)
        try f.repo.deviceReports.add(
            .init(channel: .production, installs: [.init(pack: "Levels", version: 2, started: 1, failed: 2)]), app: app)
        let halt = try f.repo.releases.advancePhasedRollouts(now: start.addingTimeInterval(3800))
        #expect(halt.count == 1 && halt[0].contains("halted"), "\(halt)")
        #expect(try share(f) == 0, "halted: no further device takes the candidate")
        let halted = try #require(try f.repo.releases.phasedRollout(app: app, pack: "Levels"))
        #expect(halted.state == "halted")
        #expect(halted.reason?.contains("2 of 102 installs failed") == true, "\(halted.reason ?? "")")
        #expect(halted.reason?.contains("live version 1: 1 of 100 installs failed (1 %)") == true)
        #expect(try f.catalog(.production).packs[0].rolloutBasisPoints == 0)
        let audit = try f.repo.audit.entries(app: app, action: "rollout.halt", limit: 10, before: nil).entries
        #expect(audit.count == 1 && audit[0].tokenID == nil && audit[0].actorRole == "system")
        #expect(audit.first?.details["percent"] == "0")
        // A halted rollout stays halted.
        #expect(try f.repo.releases.advancePhasedRollouts(now: start.addingTimeInterval(99_999)).isEmpty)
        #expect(try share(f) == 0)

        // A new schedule takes over; a share set by hand cancels it.
        try f.repo.releases.setPhasedRollout(
            app: app, pack: "Levels", steps: [1000, 10_000], stepSeconds: 60, now: start)
        try f.repo.releases.setRollout(app: app, pack: "Levels", percent: 20)
        let cancelled = try #require(try f.repo.releases.phasedRollout(app: app, pack: "Levels"))
        #expect(cancelled.state == "cancelled" && cancelled.reason?.contains("by hand") == true)
        #expect(try f.repo.releases.advancePhasedRollouts(now: start.addingTimeInterval(99_999)).isEmpty)
        #expect(try share(f) == 2000)
    }

    @Test(arguments: Backend.databases) func aPhasedRolloutPromotesAtItsLastStepAndStopsWhenTheCandidateChanges(
        _ backend: Backend
    ) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        try stage(f)
        let start = Date()
        try f.repo.releases.setPhasedRollout(
            app: app, pack: "Levels", steps: [100, 10_000], stepSeconds: 60, now: start)
        // Without reports of either version nothing halts; the last step promotes the candidate.
        _ = try f.repo.releases.advancePhasedRollouts(now: start.addingTimeInterval(61))
        let state = try f.repo.releases.channelState(app: app, channel: .production).packs.first
        #expect(state?.liveVersion == 2 && state?.candidateVersion == nil)
        #expect(try f.repo.releases.phasedRollout(app: app, pack: "Levels")?.state == "done")

        // Dropped by a rollback: the next round cancels it.
        _ = try f.upload(seed: 3)
        try f.repo.releases.approve(
            requestID: try #require(
                try f.repo.releases.release(
                    app: app, pack: "Levels", version: 3, channel: .production, rolloutPercent: 1)
            ).id)
        try f.repo.releases.setPhasedRollout(
            app: app, pack: "Levels", steps: [100, 10_000], stepSeconds: 60, now: start)
        try f.repo.releases.rollback(app: app, pack: "Levels", channel: .production)
        let lines = try f.repo.releases.advancePhasedRollouts(now: start.addingTimeInterval(61))
        #expect(lines == ["phased rollout of \(app)/Levels: cancelled, version 3 is no longer the candidate"])
        #expect(try f.repo.releases.channelState(app: app, channel: .production).packs.first?.liveVersion == 2)
    }

    @Test(arguments: Backend.databases) func anArchiveTwoAppsShareIsCreditedToTheAppTheClientNames(
        _ backend: Backend
    ) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        let v1 = try f.upload(seed: 1)
        // The same archive uploaded by a second app, later (the newest version of that SHA-256).
        try f.repo.apps.create("com.example.other")
        try f.repo.apps.createPack(app: "com.example.other", id: "Levels")
        let sha = try #require(v1.archiveSHA256)
        let reader = try #require(try f.repo.archives.readBlob(sha))
        let bytes = try reader.read(count: Int(reader.size), at: 0)
        reader.close()
        let v = try f.repo.uploads.createVersion(app: "com.example.other", pack: "Levels", size: UInt64(bytes.count))
        let upload = try f.repo.uploads.beginUpload(
            app: "com.example.other", pack: "Levels", number: v.number, offset: 0)
        try bytes.withUnsafeBytes { try upload.append($0) }
        try upload.close()
        f.repo.uploads.waitForProcessing()
        let today = DownloadCounts.utcDay(Date())
        try f.repo.downloads.add([
            DownloadHit(.pack(archiveSHA256: sha, app: app), day: today, requests: 3, bytes: 300),
            DownloadHit(.pack(archiveSHA256: sha, app: "com.example.other"), day: today, requests: 2, bytes: 200),
            DownloadHit(.pack(archiveSHA256: sha), day: today, requests: 1, bytes: 100),
        ])
        let mine = try f.repo.downloads.report(app: app, days: 1).rows.filter { $0.kind == "pack" }
        let theirs = try f.repo.downloads.report(app: "com.example.other", days: 1).rows.filter { $0.kind == "pack" }
        #expect(mine.map(\.requests) == [3], "the game's devices downloaded it 3 times")
        #expect(theirs.map(\.requests) == [3], "2 named the other app, 1 named none (the newest version's app)")
    }
}
