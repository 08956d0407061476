import BacklotBasics
import BacklotCrypto
import BacklotJSON
import BacklotProtocol
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotRepository
@testable import BacklotServer

/// The release-week routes over real HTTP with curl: tokens listed, revoked and rotated (401 at
/// once), apps with the four-eyes rule, pack lists, filtered release lists, dry runs, rollouts
/// raised, halted and promoted, rollbacks, and the channel's record read back against the
/// published catalog; error bodies with separate context and hint.
@Suite(.serialized) struct ReleaseOperationsAPITests {
    typealias Fixture = ManagementAPITests.Fixture

    func json(_ r: Curl.Result) throws -> JSONNode { try JSONReader(source: "response").read(r.body).root }

    @Test func tokensAreListedRevokedAndRotatedAndRefusedAtOnce() throws {
        let f = try Fixture()
        let created = try f.call(
            "POST", "/api/tokens", token: f.admin, json: #"{"role":"uploader","label":"CI","expiresInSeconds":3600}"#)
        #expect(created.status == 201, "\(created.text)")
        // The new secret is in this answer: no cache on the way may keep it (nor any API answer).
        for answer in [created, try f.call("GET", "/api/tokens", token: f.admin)] {
            #expect(answer.headers["cache-control"] == "no-store", "\(answer.headers)")
            #expect(answer.headers["x-content-type-options"] == "nosniff", "\(answer.headers)")
        }
        for label in [#"evil\nlabel"#, #"red\u001b[31m"#, #"tab\tbed"#, #"c1\u009b2J"#, #"gnp.\u202Eexe"#] {
            let refused = try f.call(
                "POST", "/api/tokens", token: f.admin, json: "{\"role\":\"reader\",\"label\":\"\(label)\"}")
            #expect(
                refused.status == 400 && refused.text.contains("control"), "\(label): \(refused.text)")
        }
        let body = try json(created)
        let secret = try #require(body["token"]?.stringValue)
        let id = try #require(body["id"].flatMap { if case .number(let n) = $0.kind { Int(n) } else { nil } })
        #expect(
            body["label"]?.stringValue == "CI" && body["expires"]?.stringValue != nil
                && body["created"]?.stringValue?.hasSuffix("Z") == true)
        #expect(
            try f.call("POST", "/api/tokens", token: f.admin, json: #"{"role":"reader","expiresInSeconds":30}"#).status
                == 400)
        #expect(try f.call("GET", "/api/apps", token: secret).status == 200)

        let list = try f.call("GET", "/api/tokens", token: f.admin)
        #expect(
            list.status == 200 && !list.text.contains(secret) && !list.text.contains(f.admin)
                && !list.text.contains("hash"))
        let tokens = try json(list)["tokens"]?.arrayElements ?? []
        #expect(
            tokens.count == 2 && tokens[1]["label"]?.stringValue == "CI" && tokens[1]["lastUsed"]?.stringValue != nil
                && tokens[0]["revoked"]?.kind == .null)
        #expect(try f.call("GET", "/api/tokens", token: secret).status == 403)

        let revoked = try f.call("DELETE", "/api/tokens/\(id)", token: f.admin)
        #expect(revoked.status == 200 && revoked.text.contains("\"revoked\":\"20"), "\(revoked.text)")
        let refused = try f.call("GET", "/api/apps", token: secret)
        #expect(
            refused.status == 401 && refused.headers["www-authenticate"] == "Bearer"
                && refused.text.contains("the token was revoked at"))
        #expect(try f.call("DELETE", "/api/tokens/999", token: f.admin).status == 404)
        let last = try f.call("DELETE", "/api/tokens/1", token: f.admin)
        #expect(
            try last.status == 409
                && json(last)["error"]?["hint"]?.stringValue?.contains("create another admin token first") == true,
            "\(last.text)")

        // The first admin token rotated: same id, a new secret, the old one 401 at once.
        let rotated = try f.call("POST", "/api/tokens/1/rotate", token: f.admin)
        #expect(rotated.status == 201, "\(rotated.text)")
        let fresh = try #require(try json(rotated)["token"]?.stringValue)
        #expect(try try json(rotated)["role"]?.stringValue == "admin")
        #expect(try f.call("GET", "/api/tokens", token: f.admin).status == 401)
        #expect(try f.call("GET", "/api/tokens", token: fresh).status == 200)

        // Expired: 401 saying so (the record's expiry moved into the past, as time would).
        let short = try json(
            try f.call("POST", "/api/tokens", token: fresh, json: #"{"role":"reader","expiresInSeconds":60}"#))
        let shortID = try #require(short["id"].flatMap { if case .number(let n) = $0.kind { Int64(n) } else { nil } })
        try f.repository.db.transaction { tx in
            try tx.run("UPDATE tokens SET expires = 86400 WHERE id = ?", [.integer(shortID)])
        }
        let expired = try f.call("GET", "/api/apps", token: short["token"]?.stringValue)
        #expect(
            expired.status == 401 && expired.text.contains("the token expired at 1970-01-02T00:00:00Z"),
            "\(expired.text)")
    }

    @Test func errorBodiesKeepContextAndHintApartFromTheMessage() throws {
        let f = try Fixture()
        _ = try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"com.example.game"}"#)
        _ = try f.call("POST", "/api/apps/com.example.game/packs", token: f.admin, json: #"{"id":"Levels"}"#)
        let r = try f.call(
            "POST", "/api/apps/com.example.game/packs/Levels/rollout", token: f.admin, json: #"{"percent":20}"#)
        #expect(r.status == 409)
        let error = try #require(try json(r)["error"])
        #expect(
            error["code"]?.stringValue == "conflict"
                && error["message"]?.stringValue == "no staged rollout on production")
        #expect(
            error["context"]?.stringValue == "com.example.game/Levels"
                && error["hint"]?.stringValue?.contains("--rollout") == true)
        let missing = try json(try f.call("GET", "/api/apps/nope/packs", token: f.admin))["error"]
        #expect(missing?["message"]?.stringValue == "no such app" && missing?["context"]?.stringValue == "nope")
        // A misspelt app gets the one it probably meant in the answer's hint (issue #34).
        let misspelt = try f.call("GET", "/api/apps/com.example.gmae/packs", token: f.admin)
        let guess = try #require(try json(misspelt)["error"])
        #expect(misspelt.status == 404 && guess["code"]?.stringValue == "notFound")
        #expect(guess["hint"]?.stringValue?.hasPrefix("did you mean com.example.game?") == true, "\(misspelt.text)")
        let form = try f.call(
            "POST", "/api/apps", token: f.admin, headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: nil)
        #expect(form.status == 415 && form.text.contains("application/json"), "\(form.text)")
        let typed = try f.call(
            "POST", "/api/apps", token: f.admin, headers: ["Content-Type": "application/json; charset=utf-8"])
        #expect(typed.status == 400, "\(typed.text)")  // the type is right; the empty body is not
        let bare = try json(try f.call("GET", "/api/apps"))["error"]
        #expect(bare?["code"]?.stringValue == "unauthorized" && bare?["hint"]?.stringValue != nil)
    }

    @Test func appsPacksVersionsWithDigestsAndTheReleaseWeekMatchThePublishedCatalog() throws {
        let f = try Fixture()
        let app = try f.call("POST", "/api/apps", token: f.admin, json: #"{"id":"com.example.game","fourEyes":true}"#)
        #expect(try app.status == 201 && json(app)["fourEyes"]?.kind == .bool(true), "\(app.text)")
        let apps = try json(try f.call("GET", "/api/apps", token: f.admin))["apps"]?.arrayElements ?? []
        #expect(
            apps.count == 1 && apps[0]["id"]?.stringValue == "com.example.game"
                && apps[0]["created"]?.stringValue != nil)
        #expect(
            try f.call("POST", "/api/apps/com.example.game/packs", token: f.admin, json: #"{"id":"Levels"}"#).status
                == 201)
        let empty =
            try json(try f.call("GET", "/api/apps/com.example.game/packs", token: f.admin))["packs"]?.arrayElements
            ?? []
        #expect(empty.count == 1 && empty[0]["versions"]?.kind == .number("0") && empty[0]["latest"]?.kind == .null)

        // Versions with a declared digest: 201 + Location, then 200 with the same version.
        var numbers: [Int] = []
        for seed in [1, 2] as [UInt64] {
            let archive = try f.packArchive(seed: seed)
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: archive)))
            let body = "{\"size\":\(bytes.count),\"archiveSHA256\":\"\(SHA256.hash(bytes).hex)\"}"
            let created = try f.call(
                "POST", "/api/apps/com.example.game/packs/Levels/versions", token: f.admin, json: body)
            #expect(created.status == 201, "\(created.text)")
            let number = try #require(
                try json(created)["version"].flatMap { if case .number(let n) = $0.kind { Int(n) } else { nil } })
            #expect(created.headers["location"] == "/api/apps/com.example.game/packs/Levels/versions/\(number)")
            let same = try f.call(
                "POST", "/api/apps/com.example.game/packs/Levels/versions", token: f.admin, json: body)
            #expect(
                same.status == 200 && same.headers["location"] == nil && same.text.contains("\"version\":\(number)"),
                "\(same.text)")
            #expect(
                try f.call(
                    "PUT", "/api/apps/com.example.game/packs/Levels/versions/\(number)/archive", token: f.admin,
                    file: archive
                ).status == 202)
            #expect(try f.waitUntilProcessed("com.example.game", "Levels", number)["state"]?.stringValue == "COMPLETE")
            numbers.append(number)
        }
        #expect(
            try f.call(
                "POST", "/api/apps/com.example.game/packs/Levels/versions", token: f.admin,
                json: #"{"size":100,"archiveSHA256":"ABC"}"#
            ).status == 400)
        let packs =
            try json(try f.call("GET", "/api/apps/com.example.game/packs", token: f.admin))["packs"]?.arrayElements
            ?? []
        #expect(packs[0]["versions"]?.kind == .number("2") && packs[0]["latest"]?.kind == .number("2"))

        let alice = try json(
            try f.call(
                "POST", "/api/tokens", token: f.admin, json: #"{"role":"uploader","label":"alice","person":"alice"}"#))[
                "token"]?
            .stringValue
        let bob = try json(
            try f.call(
                "POST", "/api/tokens", token: f.admin, json: #"{"role":"reviewer","label":"bob","person":"bob"}"#))[
                "token"]?
            .stringValue

        // A first production release with a rollout: 409, nothing recorded or published.
        let early = try f.call(
            "POST", "/api/apps/com.example.game/releases", token: alice,
            json: #"{"pack":"Levels","version":1,"channel":"production","rollout":10}"#)
        #expect(early.status == 409 && early.text.contains("release it to every device first"), "\(early.text)")
        try expectPublishedMatchesRecord(f)
        // Dry run.
        let dry = try f.call(
            "POST", "/api/apps/com.example.game/releases", token: alice,
            json: #"{"pack":"Levels","version":1,"channel":"production","dryRun":true}"#)
        #expect(
            try dry.status == 200 && json(dry)["needsApproval"]?.kind == .bool(true)
                && json(dry)["change"]?["to"]?["version"]?.kind == .number("1"), "\(dry.text)")
        #expect(
            try try json(try f.call("GET", "/api/apps/com.example.game/releases", token: alice))["releases"]?
                .arrayElements?.isEmpty == true)

        // Four eyes: alice asks, alice may not approve (alice is an uploader; the admin may, but not as the asker).
        let asked = try f.call(
            "POST", "/api/apps/com.example.game/releases", token: f.admin,
            json: #"{"pack":"Levels","version":1,"channel":"production"}"#)
        #expect(asked.status == 202)
        let own = try f.call("POST", "/api/apps/com.example.game/releases/1/approve", token: f.admin)
        #expect(try own.status == 403 && json(own)["error"]?["code"]?.stringValue == "fourEyes", "\(own.text)")
        let approved = try f.call("POST", "/api/apps/com.example.game/releases/1/approve", token: bob)
        #expect(approved.status == 200, "\(approved.text)")
        let record = try json(approved)
        #expect(
            record["requestedBy"]?["id"]?.kind == .number("1") && record["decidedBy"]?["label"]?.stringValue == "bob"
                && record["decided"]?.stringValue != nil)
        try expectPublishedMatchesRecord(f)

        // 10 %, halt, 50 %, 100 %, roll back.
        #expect(
            try f.call(
                "POST", "/api/apps/com.example.game/releases", token: alice,
                json: #"{"pack":"Levels","version":2,"channel":"production","rollout":10}"#
            ).status == 202)
        let pending = try f.call(
            "GET", "/api/apps/com.example.game/releases?channel=production&status=pending", token: alice)
        #expect(
            try json(pending)["releases"]?.arrayElements?.map { $0["id"]?.kind } == [.number("2")], "\(pending.text)")
        #expect(try f.call("GET", "/api/apps/com.example.game/releases?status=done", token: alice).status == 400)
        #expect(try f.call("GET", "/api/apps/com.example.game/releases?channel=beta", token: alice).status == 400)
        #expect(try f.call("POST", "/api/apps/com.example.game/releases/2/approve", token: bob).status == 200)
        try expectPublishedMatchesRecord(f)
        // A rollout is kept in basis points: more decimals are rounded DOWN to one (99.999 stays a
        // rollout of 99.99 % and never promotes the candidate); an exponent is read exactly.
        for (percent, kept) in [("99.999", "99.99"), ("12.345", "12.34"), ("1e1", "10"), ("50.0001", "50")] {
            let r = try f.call(
                "POST", "/api/apps/com.example.game/packs/Levels/rollout", token: bob, json: "{\"percent\":\(percent)}")
            #expect(
                r.status == 200 && r.text.contains("\"rolloutPercent\":\(kept),"), "\(percent): \(r.text)")
            try expectPublishedMatchesRecord(f)
        }
        for percent in ["12.50", "0", "50", "100"] {
            let r = try f.call(
                "POST", "/api/apps/com.example.game/packs/Levels/rollout", token: bob, json: "{\"percent\":\(percent)}")
            #expect(r.status == 200, "\(r.text)")
            try expectPublishedMatchesRecord(f)
        }
        // An invalid pack ID in a body is 400 as in a path; a reason has a length.
        let badPack = try f.call(
            "POST", "/api/apps/com.example.game/releases", token: alice,
            json: #"{"pack":"../x","version":1,"channel":"internal"}"#)
        #expect(badPack.status == 400, "\(badPack.text)")
        let longReason = String(repeating: "x", count: 2001)
        let tooLong = try f.call(
            "POST", "/api/apps/com.example.game/releases/1/reject", token: bob, json: "{\"reason\":\"\(longReason)\"}")
        #expect(tooLong.status == 400 && tooLong.text.contains("at most 2000"), "\(tooLong.status)")
        // A reason is shown in terminals and pages: no escape sequence, no reordering.
        for reason in [#"ok\u001b[2J\u001b[31mFAKE: approved"#, #"line\nbreak"#, #"\u2066isolated"#] {
            let refused = try f.call(
                "POST", "/api/apps/com.example.game/releases/1/reject", token: bob, json: "{\"reason\":\"\(reason)\"}")
            #expect(refused.status == 400 && refused.text.contains("control"), "\(reason): \(refused.text)")
        }
        let rolledBack = try f.call(
            "POST", "/api/apps/com.example.game/packs/Levels/rollback", token: bob, json: #"{"channel":"production"}"#)
        #expect(rolledBack.status == 200 && rolledBack.text.contains("\"version\":1"), "\(rolledBack.text)")
        try expectPublishedMatchesRecord(f)
        #expect(
            try f.call(
                "POST", "/api/apps/com.example.game/packs/Levels/rollback", token: bob,
                json: #"{"channel":"production"}"#
            ).status == 409)
        #expect(try f.call("GET", "/api/apps/com.example.game/channels/beta", token: alice).status == 400)
        #expect(
            try f.call("PATCH", "/api/apps/com.example.game", token: f.admin, json: #"{"fourEyes":false}"#).text
                .contains("\"fourEyes\":false"))
        #expect(
            try f.call("PATCH", "/api/apps/com.example.game", token: bob, json: #"{"fourEyes":false}"#).status == 403)
    }

    /// `GET …/channels/production` against the catalog the tree serves.
    func expectPublishedMatchesRecord(_ f: Fixture, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let state = try json(try f.call("GET", "/api/apps/com.example.game/channels/production", token: f.admin))
        let published = try Curl.run(f.server.baseURL + "v1/apps/com.example.game/production/catalog.json")
        let key = try PublicKeyFile.read(path: f.repository.directory.publicKeyPath)
        #expect(state["signingKey"]?.stringValue == key.keyID, sourceLocation: sourceLocation)
        let packs = state["packs"]?.arrayElements ?? []
        guard published.status == 200 else {
            #expect(packs.isEmpty && state["catalogVersion"]?.kind == .null, sourceLocation: sourceLocation)
            return
        }
        let catalog = try Catalog.verify(
            published.body, trusting: [key], app: "com.example.game", channel: .production, now: Date(),
            source: "catalog")
        #expect(state["catalogVersion"]?.kind == .number(String(catalog.version)), sourceLocation: sourceLocation)
        #expect(packs.count == catalog.packs.count, sourceLocation: sourceLocation)
        for (record, entry) in zip(packs, catalog.packs) {
            #expect(record["pack"]?.stringValue == entry.id.rawValue, sourceLocation: sourceLocation)
            #expect(
                record["live"]?["version"]?.kind == .number(String(entry.release.version)),
                sourceLocation: sourceLocation)
            #expect(
                record["live"]?["archiveSHA256"]?.stringValue == entry.release.archiveSHA256.hex,
                sourceLocation: sourceLocation)
            if let candidate = entry.candidate {
                #expect(
                    record["candidate"]?["version"]?.kind == .number(String(candidate.version)),
                    sourceLocation: sourceLocation)
                let percent = record["candidate"]?["rolloutPercent"]?.kind
                #expect(
                    percent == .number(JSONNode.number(Double(entry.rolloutBasisPoints) / 100).serialized()),
                    "\(String(describing: percent))", sourceLocation: sourceLocation)
            } else {
                #expect(record["candidate"]?.kind == .null, sourceLocation: sourceLocation)
            }
        }
    }
}
