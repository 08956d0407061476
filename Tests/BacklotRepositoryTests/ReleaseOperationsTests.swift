import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotProtocol
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotRepository

/// The operations a release week needs, on SQLite and PostgreSQL (and a bucket where the tree or uploads matter): revocable, expiring and
/// rotatable tokens read by every server at once; rollouts that never publish what the record does
/// not say (raise, halt, promote, roll back through the channel's history); four-eyes approvals;
/// dry runs; declared digests that find an existing version; abandoned uploads cleaned up.
@Suite(.serialized) struct ReleaseOperationsTests {
    typealias Fixture = RepositoryTests.Fixture

    func code(_ error: any Error) -> String { (error as? BacklotError)?.code.name ?? "\(error)" }

    @Test(arguments: Backend.databases) func tokensExpireAreRevokedAndRotatedOnEveryInstanceAtOnce(
        _ backend: Backend
    ) throws {
        let dir = try TemporaryDirectory("tokens4")
        defer { dir.remove() }
        let database = try backend.database("tokens4")
        let repo = try Repository(directory: RepositoryDirectory(path: dir.at("data")), database: database)
        if backend.isShared { _ = try repo.tokens.createInitialAdmin() }
        // A second server on the same metadata.
        let other = try Repository(directory: RepositoryDirectory(path: dir.at("data")), database: database)
        let first = try #require(try repo.tokens.list().first)
        #expect(first.role == .admin && first.id == 1)

        let reviewer = try repo.tokens.issue(role: .reviewer, label: "release manager", expiresIn: 3600)
        #expect(reviewer.expires.map { $0.timeIntervalSince(reviewer.created) } == 3600)
        #expect(
            try other.tokens.authenticate(reviewer.token)
                == Caller(
                    id: reviewer.id, label: "release manager", role: .reviewer,
                    person: TokenReference.defaultPerson(ofToken: reviewer.id))
        )
        #expect(throws: BacklotError.self) { try repo.tokens.issue(role: .reader, expiresIn: 59) }
        #expect(throws: BacklotError.self) {
            try repo.tokens.issue(role: .reader, expiresIn: Tokens.longestLifetime + 1)
        }

        // Last use: recorded on first use, then at most once a minute.
        let used = try #require(try repo.tokens.token(id: reviewer.id).lastUsed)
        try repo.db.transaction { tx in
            try tx.run(
                "UPDATE tokens SET last_used = ? WHERE id = ?",
                [.integer(Int64(used.timeIntervalSince1970) - 30), .integer(Int64(reviewer.id))])
        }
        _ = try repo.tokens.authenticate(reviewer.token)
        #expect(
            try repo.tokens.token(id: reviewer.id).lastUsed == used.addingTimeInterval(-30),
            "a use within the minute writes nothing")
        try repo.db.transaction { tx in
            try tx.run(
                "UPDATE tokens SET last_used = ? WHERE id = ?",
                [.integer(Int64(used.timeIntervalSince1970) - 120), .integer(Int64(reviewer.id))])
        }
        _ = try repo.tokens.authenticate(reviewer.token)
        #expect(try repo.tokens.token(id: reviewer.id).lastUsed.map { $0 >= used } == true)

        // Expired: refused, saying when.
        try repo.db.transaction { tx in
            try tx.run("UPDATE tokens SET expires = 1000 WHERE id = ?", [.integer(Int64(reviewer.id))])
        }
        #expect { try other.tokens.authenticate(reviewer.token) } throws: {
            let e = $0 as? BacklotError
            return e?.code == .unauthorized && e?.message == "the token expired at 1970-01-01T00:16:40Z"
        }
        #expect(try repo.tokens.role(ofToken: reviewer.token) == nil)

        // Revoked: refused at once by the other server; listing never shows a secret.
        let uploader = try repo.tokens.issue(role: .uploader, label: "CI")
        #expect(try other.tokens.role(ofToken: uploader.token) == .uploader)
        let revoked = try repo.tokens.revoke(id: uploader.id)
        #expect(revoked.revoked != nil)
        #expect { try other.tokens.authenticate(uploader.token) } throws: {
            ($0 as? BacklotError)?.message.hasPrefix("the token was revoked at") == true
        }
        #expect(!"\(try repo.tokens.list())".contains(uploader.token))
        #expect { try repo.tokens.revoke(id: 999) } throws: { code($0) == "notFound" }

        // The last admin token cannot be revoked; with a second one it can, and rotation keeps id, role and label.
        #expect { try repo.tokens.revoke(id: first.id) } throws: {
            ($0 as? BacklotError)?.code == .conflict
                && ($0 as? BacklotError)?.hint?.contains("another admin token") == true
        }
        let second = try repo.tokens.issue(role: .admin, label: "second admin")
        let rotated = try repo.tokens.rotate(id: second.id)
        #expect(
            rotated.id == second.id && rotated.role == .admin && rotated.label == "second admin"
                && rotated.token != second.token)
        #expect(
            try other.tokens.role(ofToken: second.token) == nil && other.tokens.role(ofToken: rotated.token) == .admin)
        try repo.tokens.revoke(id: first.id)
        #expect { try repo.tokens.revoke(id: second.id) } throws: { code($0) == "conflict" }
        #expect { try repo.tokens.rotate(id: uploader.id) } throws: { code($0) == "conflict" }
    }

    /// Reads the published catalog and checks it against the record (`channelState`): the same
    /// packs, live versions, candidates and shares, and the same catalog version.
    func expectPublishedMatchesRecord(
        _ f: Fixture, _ channel: Channel, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let state = try f.repo.releases.channelState(app: "com.example.game", channel: channel)
        guard try f.catalogBytes(channel) != nil else {
            #expect(state.packs.isEmpty && state.catalogVersion == nil, sourceLocation: sourceLocation)
            return
        }
        let catalog = try f.catalog(channel)
        #expect(state.catalogVersion == catalog.version, sourceLocation: sourceLocation)
        #expect(state.signingKey == f.key.keyID, sourceLocation: sourceLocation)
        #expect(state.packs.map(\.pack) == catalog.packs.map(\.id.rawValue), sourceLocation: sourceLocation)
        for (record, published) in zip(state.packs, catalog.packs) {
            #expect(record.liveVersion == published.release.version, sourceLocation: sourceLocation)
            #expect(record.liveArchiveSHA256 == published.release.archiveSHA256.hex, sourceLocation: sourceLocation)
            #expect(record.candidateVersion == published.candidate?.version, sourceLocation: sourceLocation)
            #expect(
                record.candidatePercent.map { Int(($0 * 100).rounded()) }
                    == (published.candidate == nil ? nil : published.rolloutBasisPoints),
                sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: Backend.allCases) func rolloutsNeedALiveVersionAndThePublishedCatalogAlwaysMatchesTheRecord(
        _ backend: Backend
    ) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        for seed in 1...3 { #expect(try f.upload(seed: UInt64(seed)).state == .complete) }
        let app = "com.example.game"
        // Nothing live on production: a rollout is refused at the request, saying what to do.
        #expect {
            try f.repo.releases.release(app: app, pack: "Levels", version: 1, channel: .production, rolloutPercent: 10)
        } throws: {
            let e = $0 as? BacklotError
            return e?.code == .conflict
                && e?.hint == "release it to every device first (no rollout), then roll the next version out"
        }
        #expect {
            try f.repo.releases.plan(app: app, pack: "Levels", version: 1, channel: .production, rolloutPercent: 10)
        } throws: { code($0) == "conflict" }
        try expectPublishedMatchesRecord(f, .production)
        try f.repo.releases.approve(
            requestID: try #require(
                try f.repo.releases.release(app: app, pack: "Levels", version: 1, channel: .production)
            ).id)
        try expectPublishedMatchesRecord(f, .production)

        // A rollout request, then the pack withdrawn: approval checks again and the request stays pending.
        let staged = try #require(
            try f.repo.releases.release(app: app, pack: "Levels", version: 2, channel: .production, rolloutPercent: 10))
        try f.repo.releases.withdraw(app: app, pack: "Levels", channel: .production)
        #expect { try f.repo.releases.approve(requestID: staged.id) } throws: { code($0) == "conflict" }
        #expect(try f.repo.releases.request(staged.id).status == "pending")
        try expectPublishedMatchesRecord(f, .production)
        try f.repo.releases.approve(
            requestID: try #require(
                try f.repo.releases.release(app: app, pack: "Levels", version: 1, channel: .production)
            ).id)

        // Dry run: what would change, nothing written.
        let before = try f.repo.releases.channelState(app: app, channel: .production)
        let plan = try f.repo.releases.plan(
            app: app, pack: "Levels", version: 2, channel: .production, rolloutPercent: 10)
        #expect(
            plan.fromVersion == 1 && plan.fromPercent == nil && plan.toVersion == 2 && plan.toPercent == 10
                && plan.needsApproval)
        #expect(plan.catalogVersion > (before.catalogVersion ?? 0))
        #expect(try f.repo.releases.channelState(app: app, channel: .production) == before)

        try f.repo.releases.approve(
            requestID: try #require(
                try f.repo.releases.release(
                    app: app, pack: "Levels", version: 2, channel: .production, rolloutPercent: 10)
            ).id)
        try expectPublishedMatchesRecord(f, .production)
        #expect(try f.repo.releases.channelState(app: app, channel: .production).packs.first?.candidatePercent == 10)
        // Halt: the candidate stays at 0 %, no device takes it; raise again to resume.
        try f.repo.releases.setRollout(app: app, pack: "Levels", percent: 0)
        try expectPublishedMatchesRecord(f, .production)
        let halted = try f.catalog(.production).packs[0]
        #expect(
            halted.candidate?.version == 2 && halted.rolloutBasisPoints == 0
                && halted.release(forDevice: "any device").version == 1)
        try f.repo.releases.setRollout(app: app, pack: "Levels", percent: 50)
        try expectPublishedMatchesRecord(f, .production)
        // 100 promotes; a rollback without a version goes back to the version live before.
        try f.repo.releases.setRollout(app: app, pack: "Levels", percent: 100)
        try expectPublishedMatchesRecord(f, .production)
        #expect(try f.repo.releases.channelState(app: app, channel: .production).packs.first?.liveVersion == 2)
        #expect { try f.repo.releases.setRollout(app: app, pack: "Levels", percent: 20) } throws: {
            code($0) == "conflict"
        }
        #expect(try f.repo.releases.rollback(app: app, pack: "Levels", channel: .production) == 1)
        try expectPublishedMatchesRecord(f, .production)
        #expect { try f.repo.releases.rollback(app: app, pack: "Levels", channel: .production) } throws: {
            ($0 as? BacklotError)?.code == .conflict && ($0 as? BacklotError)?.hint?.contains("--version") == true
        }
        // A rollout being made is dropped by a rollback without a version; the live version stays.
        try f.repo.releases.approve(
            requestID: try #require(
                try f.repo.releases.release(
                    app: app, pack: "Levels", version: 3, channel: .production, rolloutPercent: 5)
            ).id)
        #expect(try f.repo.releases.rollback(app: app, pack: "Levels", channel: .production) == 1)
        try expectPublishedMatchesRecord(f, .production)
        #expect(try f.repo.releases.channelState(app: app, channel: .production).packs.first?.candidateVersion == nil)
        // With a version: one a reviewer approved on the channel (3, approved as a 5 % candidate)
        // or that was live there goes live; one never released there is refused, so a rollback
        // publishes nothing that no release did.
        #expect(try f.repo.releases.rollback(app: app, pack: "Levels", channel: .production, to: 3) == 3)
        try expectPublishedMatchesRecord(f, .production)
        #expect(try f.repo.releases.rollback(app: app, pack: "Levels", channel: .production) == 1)
        #expect { try f.repo.releases.rollback(app: app, pack: "Levels", channel: .external, to: 3) } throws: {
            code($0) == "conflict"
        }
        try expectPublishedMatchesRecord(f, .production)
        #expect { try f.repo.releases.setRollout(app: app, pack: "Levels", percent: 100.5) } throws: {
            code($0) == "invalidInput"
        }
    }

    @Test(arguments: Backend.databases) func fourEyesRefusesTheAskersApprovalAndRecordsWhoAskedAndDecided(
        _ backend: Backend
    ) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        let app = "com.example.game"
        _ = try f.upload(seed: 1)
        let asker = try f.repo.tokens.authenticate(
            try f.repo.tokens.issue(role: .admin, person: "alice", label: "alice's laptop").token)
        let reviewer = try f.repo.tokens.authenticate(
            try f.repo.tokens.issue(role: .reviewer, person: "bob", label: "bob").token)
        // Alice's second token is still Alice.
        let askerAgain = try f.repo.tokens.authenticate(
            try f.repo.tokens.issue(role: .admin, person: "alice", label: "alice's CI").token)
        #expect(try f.repo.apps.setFourEyes(app: app, true).fourEyes)
        let request = try #require(
            try f.repo.releases.release(app: app, pack: "Levels", version: 1, channel: .external, by: asker))
        #expect(
            request.requestedBy == TokenReference(id: asker.id, label: "alice's laptop", person: "alice")
                && request.decided == nil)
        for token in [asker, askerAgain] {
            #expect { try f.repo.releases.approve(requestID: request.id, app: app, by: token) } throws: {
                let e = $0 as? BacklotError
                return e?.code == .fourEyes && e?.message.contains("made by alice (token \(asker.id)") == true
            }
        }
        try f.repo.releases.approve(requestID: request.id, app: app, by: reviewer)
        let approved = try f.repo.releases.request(request.id)
        #expect(
            approved.status == "approved"
                && approved.decidedBy == TokenReference(id: reviewer.id, label: "bob", person: "bob")
                && approved.decided != nil)
        // Off again: the asker may approve; a rejection records its reason and who decided.
        try f.repo.apps.setFourEyes(app: app, false)
        try f.repo.releases.approve(
            requestID: try #require(
                try f.repo.releases.release(app: app, pack: "Levels", version: 1, channel: .production, by: asker)
            ).id, by: asker)
        let rejected = try #require(
            try f.repo.releases.release(app: app, pack: "Levels", version: 1, channel: .external, by: asker))
        try f.repo.releases.reject(requestID: rejected.id, reason: "not this week", by: reviewer)
        #expect(try f.repo.releases.request(rejected.id).reason == "not this week")
        // Filters.
        #expect(try f.repo.releases.requests(app: app, channel: .external).map(\.id) == [request.id, rejected.id])
        #expect(try f.repo.releases.requests(app: app, status: "rejected").map(\.id) == [rejected.id])
        #expect(try f.repo.releases.requests(app: app, channel: .production, status: "pending").isEmpty)
        #expect { try f.repo.releases.requests(app: app, status: "done") } throws: { code($0) == "invalidInput" }
    }

    /// The archive's digest is made beside the check of its chunks (`ArchiveDigestTask`), but
    /// an archive that is not the one declared is still refused as such when it is also no pack;
    /// without a declared digest, the check's own reason is given.
    @Test(arguments: Backend.databases) func aWrongDeclaredDigestIsSaidBeforeWhatElseIsWrong(_ backend: Backend) throws
    {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        let app = "com.example.game"
        let bytes = [UInt8]((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })  // no pack
        let sha = SHA256.hash(bytes).hex
        let wrong = String(repeating: "cd", count: 32)
        for (number, declared) in [(1, wrong as String?), (2, nil)] {
            let (version, _) = try f.repo.uploads.openVersion(
                app: app, pack: "Levels", size: UInt64(bytes.count), archiveSHA256: declared)
            #expect(version.number == number)
            let up = try f.repo.uploads.beginUpload(app: app, pack: "Levels", number: number, offset: 0)
            try bytes.withUnsafeBytes { try up.append($0) }
            try up.close()
            f.repo.uploads.waitForProcessing()
            let failed = try f.repo.uploads.version(app: app, pack: "Levels", number: number)
            #expect(failed.state == .failed)
            let reason = failed.reason ?? ""
            if declared != nil {
                #expect(reason.contains(sha) && reason.contains(wrong), "\(reason)")
            } else {
                #expect(!reason.contains(sha) && !reason.isEmpty, "\(reason)")
            }
        }
    }

    @Test(arguments: Backend.databases) func aDeclaredDigestFindsTheExistingVersionAndAMismatchFailsTheUpload(
        _ backend: Backend
    ) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        let app = "com.example.game"
        let src = try TemporaryDirectory("src")
        defer { src.remove() }
        try SamplePack.writeTree(in: src, seed: 7)
        let bytes = Array(
            try Data(
                contentsOf: URL(
                    fileURLWithPath: try SamplePack.build(in: src, manifestJSON: SamplePack.manifest(id: "Levels")))))
        let sha = SHA256.hash(bytes).hex
        let size = UInt64(bytes.count)
        #expect {
            try f.repo.uploads.openVersion(app: app, pack: "Levels", size: size, archiveSHA256: sha.uppercased())
        } throws: { code($0) == "invalidInput" }
        let (created, isNew) = try f.repo.uploads.openVersion(app: app, pack: "Levels", size: size, archiveSHA256: sha)
        #expect(isNew && created.number == 1)
        let upload = try f.repo.uploads.beginUpload(app: app, pack: "Levels", number: 1, offset: 0)
        try bytes[..<1000].withUnsafeBytes { try upload.append($0) }
        try upload.close()
        // The same archive again: the interrupted version, to resume at its received byte.
        let (again, againNew) = try f.repo.uploads.openVersion(app: app, pack: "Levels", size: size, archiveSHA256: sha)
        #expect(!againNew && again.number == 1 && again.state == .awaitingUpload && again.received == 1000)
        let rest = try f.repo.uploads.beginUpload(app: app, pack: "Levels", number: 1, offset: 1000)
        try bytes[1000...].withUnsafeBytes { try rest.append($0) }
        try rest.close()
        f.repo.uploads.waitForProcessing()
        let (done, doneNew) = try f.repo.uploads.openVersion(app: app, pack: "Levels", size: size, archiveSHA256: sha)
        #expect(!doneNew && done.number == 1 && done.state == .complete)

        // A wrong digest declared: the upload FAILs naming both digests.
        let wrong = String(repeating: "ab", count: 32)
        let (mismatch, _) = try f.repo.uploads.openVersion(app: app, pack: "Levels", size: size, archiveSHA256: wrong)
        #expect(mismatch.number == 2)
        let up = try f.repo.uploads.beginUpload(app: app, pack: "Levels", number: 2, offset: 0)
        try bytes.withUnsafeBytes { try up.append($0) }
        try up.close()
        f.repo.uploads.waitForProcessing()
        let failed = try f.repo.uploads.version(app: app, pack: "Levels", number: 2)
        #expect(
            failed.state == .failed && failed.reason?.contains(sha) == true && failed.reason?.contains(wrong) == true,
            "\(failed.reason ?? "")")
        // A FAILED version is not found again: a new one is made.
        #expect(
            try f.repo.uploads.openVersion(app: app, pack: "Levels", size: size, archiveSHA256: wrong).version.number
                == 3)
        #expect(
            try f.repo.apps.packList(app: app).first
                == PackInfo(
                    id: "Levels", created: try f.repo.apps.packList(app: app)[0].created, versions: 3, latest: 3))
    }

    @Test(arguments: Backend.allCases) func uploadsIdleLongerThanTheLimitAreRemovedWithTheirData(
        _ backend: Backend
    ) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        let app = "com.example.game"
        let idle = try f.repo.uploads.createVersion(app: app, pack: "Levels", size: 5000)
        let upload = try f.repo.uploads.beginUpload(app: app, pack: "Levels", number: idle.number, offset: 0)
        try [UInt8](repeating: 7, count: 300).withUnsafeBytes { try upload.append($0) }
        try upload.close()
        let row = try f.repo.uploads.versionRow(app: app, pack: "Levels", number: idle.number)
        let record = f.repo.uploads.uploadRecord(row)
        #expect(f.repo.archives.receivedBytes(record) == 300)
        #expect(try f.repo.uploads.removeAbandoned(olderThan: 3600) == 0)
        // An upload a request is receiving now is never abandoned, however old.
        let busy = try f.repo.uploads.createVersion(app: app, pack: "Levels", size: 5000)
        let receiving = try f.repo.uploads.beginUpload(app: app, pack: "Levels", number: busy.number, offset: 0)
        #expect(try f.repo.uploads.removeAbandoned(olderThan: 3600, now: Date().addingTimeInterval(7200)) == 1)
        #expect(try f.repo.uploads.version(app: app, pack: "Levels", number: busy.number).state == .awaitingUpload)
        try receiving.close()
        try f.repo.uploads.deleteVersion(app: app, pack: "Levels", number: busy.number)
        #expect { try f.repo.uploads.version(app: app, pack: "Levels", number: idle.number) } throws: {
            code($0) == "notFound"
        }
        if f.repo.archives.isShared {
            // In a bucket the multipart upload is aborted and the row says nothing is left.
            let after = try #require(
                try f.repo.db.read {
                    try $0.query("SELECT upload_id, received FROM versions WHERE id = ?", [.integer(record.versionID)])
                }.first)
            #expect(after["upload_id"]?.string == nil && after["received"]?.int == 0)
        } else {
            #expect(f.repo.archives.receivedBytes(record) == 0)
        }
        #expect(try f.repo.uploads.removeAbandoned(olderThan: 3600, now: Date().addingTimeInterval(7200)) == 0)
        // The next version gets a new number; the shared-work round runs the clean-up too.
        let next = try f.repo.uploads.createVersion(app: app, pack: "Levels", size: 5000)
        #expect(next.number == busy.number + 1)
        try f.repo.shareWork(resigning: false)
        #expect(try f.repo.uploads.versions(app: app, pack: "Levels").map(\.number) == [next.number])
        #expect { try f.repo.uploads.removeAbandoned(olderThan: -1) } throws: { code($0) == "invalidInput" }
    }
}
