import BacklotBasics
import BacklotCommands
import BacklotCrypto
import BacklotHTTPClient
import BacklotJSON
import BacklotTestSupport
import Foundation
import Testing

/// A release week from the command line against a real server over HTTPS: upload (resumed, and
/// identical archives recognised), internal, production through a reviewer with a dry run first,
/// a staged rollout raised, halted and rolled back, four-eyes, and tokens listed, revoked and rotated.
@Suite(.serialized) struct ReleaseWeekCommandTests {
    struct CLI {
        let s: ServedRepository

        /// Runs a command with the server and CA from the environment and the token from `$BACKLOT_TOKEN`.
        func callAsFunction(_ args: [String], token: String) -> (status: Int32, out: String, err: String) {
            let io = CapturedIO(environment: [
                "BACKLOT_SERVER": s.server.baseURL, "BACKLOT_CA": s.ca, "BACKLOT_TOKEN": token,
            ])
            let status = BacklotCLI.main(args, io: io)
            return (status, io.standardOutput, io.standardError)
        }

        func json(_ args: [String], token: String) throws -> JSONNode {
            let r = self(args + ["--json"], token: token)
            #expect(r.status == 0, "\(args): \(r.err)")
            return try JSONReader(source: args.joined(separator: " ")).read(r.out).root
        }
    }

    static let app = ["--app", "com.example.game"]

    @Test func aReleaseWeek() throws {
        let s = try ServedRepository("cli-release-week")
        defer { s.stop() }
        let cli = CLI(s: s)
        let admin = s.admin
        #expect(cli(["apps", "create", "com.example.game"], token: admin).status == 0)
        let apps = try cli.json(["apps", "list"], token: admin)
        #expect(apps["apps"]?.arrayElements?.first?["app"]?.stringValue == "com.example.game")
        #expect(apps["apps"]?.arrayElements?.first?["fourEyes"]?.kind == .bool(false))
        let strict = try cli.json(["apps", "create", "com.example.strict", "--four-eyes"], token: admin)
        #expect(
            strict["app"]?.stringValue == "com.example.strict" && strict["fourEyes"]?.kind == .bool(true), "\(strict)")
        let uploader = try #require(
            try cli.json(
                ["tokens", "create", "--role", "uploader", "--label", "ci", "--expires", "30d"], token: admin)["token"]?
                .stringValue)
        let reviewerRun = cli(["tokens", "create", "--role", "reviewer", "--label", "release manager"], token: admin)
        let reviewer = reviewerRun.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(reviewer.hasPrefix("blt_") && reviewerRun.err.contains("reviewer"), "\(reviewerRun)")
        let listed = cli(["tokens", "list", "--json"], token: admin)
        #expect(listed.out.contains("\"label\": \"ci\"") && listed.out.contains("\"expires\": \"20"), "\(listed.out)")
        #expect(
            !listed.out.contains(uploader) && !listed.out.contains(reviewer) && !listed.out.contains(admin),
            "tokens list never shows a secret")

        // Upload: version 1; the same file again is recognised and creates nothing.
        try SamplePack.writeTree(in: s.dir, seed: 42)
        let v1 = try SamplePack.build(in: s.dir, manifestJSON: SamplePack.manifest(id: "Levels"), name: "v1.pack")
        let first = cli(["upload", v1] + Self.app, token: uploader)
        #expect(first.status == 0 && first.out.contains("version 1: COMPLETE"), "\(first)")
        #expect(first.err.contains("verifying on the server…"), "\(first.err)")
        let again = cli(["upload", v1] + Self.app, token: uploader)
        #expect(
            again.status == 0 && again.err.contains("is already version 1")
                && again.err.contains("nothing was created"), "\(again)")
        let quiet = cli(["upload", v1, "--json"] + Self.app, token: uploader)
        #expect(quiet.status == 0 && quiet.err.isEmpty, "under --json standard error holds no notes: \(quiet.err)")
        #expect(quiet.out.contains("\"outcome\": \"existing\"") && quiet.out.contains("\"version\": 1"), "\(quiet.out)")
        let packs = try cli.json(["packs", "list"] + Self.app, token: uploader)
        #expect(packs["packs"]?.arrayElements?.first?["versionCount"]?.integer(as: Int.self) == 1, "\(packs)")

        // An upload interrupted after half its bytes resumes from the server's byte in the next run.
        try SamplePack.writeTree(in: s.dir, seed: 43)
        let v2 = try SamplePack.build(in: s.dir, manifestJSON: SamplePack.manifest(id: "Levels"), name: "v2.pack")
        let size = try #require(try FileSystem.status(v2)?.size)
        let digest = try SHA256.hash(fileAt: v2).hex
        let http = HTTPClient(caFile: s.ca)
        let auth = ["Authorization": "Bearer \(uploader)", "Content-Type": "application/json"]
        let versions = s.server.baseURL + "api/apps/com.example.game/packs/Levels/versions"
        let made = try http.send(
            "POST", versions, headers: auth,
            body: .bytes(Array(#"{"size":\#(size),"archiveSHA256":"\#(digest)"}"#.utf8)))
        #expect(made.status == 201)
        let half = size / 2
        let partial = try http.send(
            "PUT", versions + "/2/archive",
            headers: [
                "Authorization": "Bearer \(uploader)", "Upload-Offset": "0",
                "Content-Type": "application/octet-stream",
            ],
            body: .file(path: v2, offset: 0, length: half))
        #expect((200..<300).contains(partial.status), "\(partial.status) \(partial.text)")
        let resumed = cli(["upload", v2] + Self.app, token: uploader)
        #expect(resumed.status == 0 && resumed.out.contains("version 2: COMPLETE"), "\(resumed)")
        #expect(
            resumed.err.contains("resuming version 2 at \(Int(Double(half) / Double(size) * 100)) %"), "\(resumed.err)")
        #expect(
            try cli.json(["versions", "--pack", "Levels"] + Self.app, token: uploader)["versions"]?.arrayElements?.count
                == 2, "no third version")

        // Internal at once; production with a rollout needs a live version first.
        #expect(
            cli(["release", "--pack", "Levels", "--version", "1", "--channel", "internal"] + Self.app, token: uploader)
                .status == 0)
        let noBase = cli(
            ["release", "--pack", "Levels", "--version", "1", "--channel", "production", "--rollout", "10"] + Self.app,
            token: uploader)
        #expect(noBase.status == 2 && noBase.err.contains("release it to every device first"), "\(noBase.err)")
        let plan = cli(
            ["release", "--pack", "Levels", "--version", "1", "--channel", "production", "--dry-run"] + Self.app,
            token: uploader)
        #expect(
            plan.status == 0 && plan.out.contains("Dry run, nothing changed")
                && plan.out.contains("from            nothing")
                && plan.out.contains("to              version 1 for every device")
                && plan.out.contains("needs approval  yes"), "\(plan)")
        #expect(
            try cli.json(["releases", "list", "--pending"] + Self.app, token: uploader)["releases"]?.arrayElements?
                .isEmpty == true, "a dry run records nothing")
        let requested = cli(
            ["release", "--pack", "Levels", "--version", "1", "--channel", "production"] + Self.app, token: uploader)
        #expect(requested.status == 0 && requested.out.contains("awaits a reviewer"), "\(requested)")
        let pending = try cli.json(
            ["releases", "list", "--pending", "--channel", "production"] + Self.app, token: reviewer)
        let request = try #require(pending["releases"]?.arrayElements?.first)
        #expect(
            request["requestedBy"]?["label"]?.stringValue == "ci" && request["requested"]?.stringValue != nil,
            "\(request)")
        let number = try #require(request["id"]?.integer(as: Int.self))
        #expect(cli(["approve", "--request", String(number)] + Self.app, token: reviewer).status == 0)
        let decided = try cli.json(["releases", "list", "--channel", "production"] + Self.app, token: reviewer)
        #expect(decided["releases"]?.arrayElements?.first?["decidedBy"]?["label"]?.stringValue == "release manager")

        // Version 2 to production at 10 %, raised to 50 %, halted, rolled back.
        #expect(
            cli(
                ["release", "--pack", "Levels", "--version", "2", "--channel", "production", "--rollout", "10"]
                    + Self.app, token: uploader
            ).status == 0)
        let second = try #require(
            try cli.json(["releases", "list", "--pending"] + Self.app, token: reviewer)["releases"]?.arrayElements?
                .first?["id"]?.integer(as: Int.self))
        #expect(cli(["approve", "--request", String(second)] + Self.app, token: reviewer).status == 0)
        var catalog = try cli.json(["catalog", "show", "--channel", "production"] + Self.app, token: uploader)
        var levels = try #require(catalog["packs"]?.arrayElements?.first)
        #expect(
            levels["live"]?["version"]?.integer(as: Int.self) == 1
                && levels["candidate"]?["version"]?.integer(as: Int.self) == 2)
        #expect(levels["candidate"]?["rolloutPercent"]?.integer(as: Int.self) == 10, "\(levels)")
        #expect(
            catalog["catalogVersion"]?.integer(as: Int.self) != nil && catalog["signingKey"]?.stringValue != nil,
            "\(catalog)")
        let shown = cli(["catalog", "show", "--channel", "production"] + Self.app, token: uploader)
        #expect(shown.out.contains("Levels\tlive v1\tcandidate v2 at 10 %"), "\(shown.out)")
        let raised = cli(["rollout", "--pack", "Levels", "--percent", "50"] + Self.app, token: reviewer)
        #expect(raised.status == 0 && raised.out.contains("50 % of devices"), "\(raised)")
        let halted = cli(["rollout", "--pack", "Levels", "--percent", "0"] + Self.app, token: reviewer)
        #expect(halted.status == 0 && halted.out.contains("halted"), "\(halted)")
        catalog = try cli.json(["catalog", "show", "--channel", "production"] + Self.app, token: uploader)
        levels = try #require(catalog["packs"]?.arrayElements?.first)
        #expect(levels["candidate"]?["rolloutPercent"]?.integer(as: Int.self) == 0, "\(levels)")
        let rolledBack = cli(["rollback", "--pack", "Levels", "--channel", "production"] + Self.app, token: reviewer)
        #expect(rolledBack.status == 0 && rolledBack.out.contains("version 1 is live"), "\(rolledBack)")
        catalog = try cli.json(["catalog", "show", "--channel", "production"] + Self.app, token: uploader)
        levels = try #require(catalog["packs"]?.arrayElements?.first)
        #expect(
            levels["candidate"]?.kind == .null && levels["live"]?["version"]?.integer(as: Int.self) == 1, "\(levels)")
        #expect(
            cli(["rollout", "--pack", "Levels", "--percent", "20"] + Self.app, token: reviewer).status == 2,
            "no candidate any more: 409")

        // Promotion: 100 makes the candidate live.
        #expect(
            cli(
                ["release", "--pack", "Levels", "--version", "2", "--channel", "production", "--rollout", "5"]
                    + Self.app, token: uploader
            ).status == 0)
        let third = try #require(
            try cli.json(["releases", "list", "--pending"] + Self.app, token: reviewer)["releases"]?.arrayElements?
                .first?["id"]?.integer(as: Int.self))
        #expect(cli(["approve", "--request", String(third)] + Self.app, token: reviewer).status == 0)
        let promoted = try cli.json(["rollout", "--pack", "Levels", "--percent", "100"] + Self.app, token: reviewer)
        #expect(promoted["promoted"]?.kind == .bool(true))
        levels = try #require(
            try cli.json(["catalog", "show", "--channel", "production"] + Self.app, token: uploader)["packs"]?
                .arrayElements?.first)
        #expect(
            levels["live"]?["version"]?.integer(as: Int.self) == 2 && levels["candidate"]?.kind == .null, "\(levels)")
        // Rollback to an explicit version.
        let back = try cli.json(
            ["rollback", "--pack", "Levels", "--channel", "production", "--version", "1"] + Self.app, token: reviewer)
        #expect(back["version"]?.integer(as: Int.self) == 1)
        #expect(
            try cli.json(["withdraw", "--pack", "Levels", "--channel", "internal"] + Self.app, token: reviewer)[
                "withdrawn"]?.kind == .bool(true))

        // Four-eyes: the token that asked cannot approve; reject works from both commands.
        #expect(
            try cli.json(["apps", "set", "com.example.game", "--four-eyes", "on"], token: admin)["fourEyes"]?.kind
                == .bool(true))
        #expect(
            cli(["release", "--pack", "Levels", "--version", "2", "--channel", "external"] + Self.app, token: admin)
                .status == 0)
        let own = try #require(
            try cli.json(["releases", "list", "--pending"] + Self.app, token: admin)["releases"]?.arrayElements?.first?[
                "id"]?.integer(as: Int.self))
        let refused = cli(["approve", "--request", String(own), "--json"] + Self.app, token: admin)
        #expect(refused.status != 0 && refused.err.contains("\"error\"") && refused.err.contains("403"), "\(refused)")
        #expect(refused.err.contains("\"code\":\"fourEyes\""), "the server's code is kept: \(refused.err)")
        let rejected = try cli.json(
            ["reject", "--request", String(own), "--reason", "wrong build"] + Self.app, token: reviewer)
        #expect(
            rejected["status"]?.stringValue == "rejected" && rejected["reason"]?.stringValue == "wrong build",
            "\(rejected)")

        // Tokens: revoked at once; the first admin token rotated.
        let uploaderID = try #require(
            try cli.json(["tokens", "list"], token: admin)["tokens"]?.arrayElements?.first {
                $0["label"]?.stringValue == "ci"
            }?["id"]?.integer(as: Int.self))
        #expect(cli(["tokens", "revoke", String(uploaderID)], token: admin).status == 0)
        let table = cli(["tokens", "list"], token: admin).out
        #expect(
            table.split(separator: "\n").contains { $0.hasPrefix("\(uploaderID)\t") && $0.contains("\trevoked 20") },
            "the list says it is revoked: \(table)")
        // STATE is the seventh column; PERSON, the last, names whose token it is.
        let rows = table.split(separator: "\n").dropFirst().map {
            $0.split(separator: "\t", omittingEmptySubsequences: false)
        }
        #expect(rows.filter { $0.count == 8 && $0[6] == "active" }.count == 2, "\(table)")
        #expect(rows.allSatisfy { $0.count == 8 && !$0[7].isEmpty }, "every token names its person: \(table)")
        let afterRevoke = cli(["packs", "list"] + Self.app, token: uploader)
        #expect(
            afterRevoke.status != 0 && afterRevoke.err.contains("401") && !afterRevoke.err.contains(uploader),
            "\(afterRevoke.err)")
        let adminID = try #require(
            try cli.json(["tokens", "list"], token: admin)["tokens"]?.arrayElements?.first {
                $0["role"]?.stringValue == "admin"
            }?["id"]?.integer(as: Int.self))
        // A file that cannot be written is refused before the server rotates anything: the admin
        // is never left with a secret nobody has.
        for bad in ["/nonexistent-folder/admin.token", NSTemporaryDirectory()] {
            let refused = cli(["tokens", "rotate", String(adminID), "-o", bad], token: admin)
            #expect(refused.status == 2, "\(bad): \(refused.err)")
            #expect(
                cli(["apps", "list"], token: admin).status == 0, "the admin token still works after refusing \(bad)")
        }
        let created = try cli.json(["tokens", "list"], token: admin)["tokens"]?.arrayElements?.count
        #expect(
            cli(["tokens", "create", "--role", "reader", "-o", "/nonexistent-folder/r.token"], token: admin).status == 2
        )
        #expect(
            try cli.json(["tokens", "list"], token: admin)["tokens"]?.arrayElements?.count == created,
            "no token was made")
        let rotated = cli(["tokens", "rotate", String(adminID)], token: admin)
        let newAdmin = rotated.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(rotated.status == 0 && newAdmin.hasPrefix("blt_") && newAdmin != admin, "\(rotated)")
        #expect(cli(["apps", "list"], token: admin).status != 0, "the old secret is refused")
        #expect(cli(["apps", "list"], token: newAdmin).status == 0)
        #expect(
            cli(["tokens", "revoke", "blt_abc"], token: newAdmin).err.contains("not 'blt_…'"),
            "a token given as an ID is not echoed")
    }
}
