import BacklotBasics
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotRepository

/// What the repository says to a person who got something wrong (issue #34): a misspelt app or
/// pack ID gets the one it probably meant, and an archive larger than an app's quota gets the
/// quota (Apple's 200 GB, which nothing changes), not "impossible".
@Suite struct MessageTests {
    func repository(_ name: String) throws -> (TemporaryDirectory, Repository) {
        let dir = try TemporaryDirectory(name)
        let repo = try Repository(directory: try RepositoryDirectory(path: dir.at("data")))
        try repo.apps.create("com.example.game")
        try repo.apps.create("org.sample.viewer")
        try repo.apps.createPack(app: "com.example.game", id: "Levels")
        return (dir, repo)
    }

    func refusal(_ body: () throws -> Void) -> BacklotError? {
        do {
            try body()
            return nil
        } catch {
            return error as? BacklotError
        }
    }

    @Test func aMisspeltAppGetsTheAppItProbablyMeant() throws {
        let (dir, repo) = try repository("misspelt-app")
        defer { dir.remove() }
        // Two letters swapped, through each way the repository looks an app up.
        for lookUp in [
            { _ = try repo.apps.app("com.example.gmae") },
            { _ = try repo.apps.packList(app: "com.example.gmae") },
            { try repo.apps.createPack(app: "com.example.gmae", id: "Levels") },
        ] as [() throws -> Void] {
            let e = try #require(refusal(lookUp))
            #expect(e.code == .notFound && e.message == "no such app" && e.context == "com.example.gmae")
            #expect(e.hint?.hasPrefix("did you mean com.example.game?") == true, "\(e.hint ?? "")")
            #expect(e.hint?.contains("backlot apps create com.example.gmae") == true, "\(e.hint ?? "")")
        }
        // Nothing close: how to make it, and no guess.
        let far = try #require(refusal { _ = try repo.apps.app("net.unrelated.tool") })
        #expect(far.hint == "create it first: backlot apps create net.unrelated.tool")
        // A difference of case alone is a misspelling too.
        let upper = try #require(refusal { _ = try repo.apps.app("Com.Example.Game") })
        #expect(upper.hint?.hasPrefix("did you mean com.example.game?") == true, "\(upper.hint ?? "")")
    }

    @Test func aMisspeltPackGetsThePackItProbablyMeant() throws {
        let (dir, repo) = try repository("misspelt-pack")
        defer { dir.remove() }
        let e = try #require(
            refusal { _ = try repo.uploads.createVersion(app: "com.example.game", pack: "Levles", size: 4096) })
        #expect(e.code == .notFound && e.message == "no such pack" && e.context == "com.example.game/Levles")
        #expect(e.hint?.hasPrefix("did you mean Levels?") == true, "\(e.hint ?? "")")
        let far = try #require(
            refusal { _ = try repo.uploads.createVersion(app: "com.example.game", pack: "Soundtrack", size: 4096) })
        #expect(far.hint == "a pack is made by its first upload: backlot upload PACK --app com.example.game")
    }

    @Test func anArchiveLargerThanTheQuotaNamesTheQuota() throws {
        let (dir, repo) = try repository("oversized")
        defer { dir.remove() }
        #expect(repo.quotaBytes == 200_000_000_000)
        let e = try #require(
            refusal {
                _ = try repo.uploads.createVersion(app: "com.example.game", pack: "Levels", size: 200_000_000_001)
            })
        #expect(e.code == .invalidInput && e.context == "size")
        #expect(
            e.message
                == "an archive of 200000000001 bytes is larger than an app's whole quota of 200 GB (200000000000 bytes)"
        )
        #expect(!e.description.contains("impossible"))
        let hint = try #require(e.hint)
        #expect(hint.contains("200 GB is Apple's limit") && hint.contains("nothing changes it"), "\(hint)")
        #expect(hint.contains("make the pack smaller"), "\(hint)")
        // Nothing was created by the refusal.
        #expect(try repo.apps.packList(app: "com.example.game").first?.versions == 0)

        let tiny = try #require(
            refusal { _ = try repo.uploads.createVersion(app: "com.example.game", pack: "Levels", size: 3) })
        #expect(tiny.code == .invalidInput && tiny.message.contains("is smaller than its header"), "\(tiny.message)")
    }

    @Test func anotherQuotaIsCalledThisServersQuota() throws {
        let dir = try TemporaryDirectory("oversized-small-quota")
        defer { dir.remove() }
        let repo = try Repository(directory: try RepositoryDirectory(path: dir.at("data")), quotaBytes: 5_000_000_000)
        try repo.apps.create("com.example.game")
        try repo.apps.createPack(app: "com.example.game", id: "Levels")
        let e = try #require(
            refusal {
                _ = try repo.uploads.createVersion(app: "com.example.game", pack: "Levels", size: 5_000_000_001)
            })
        #expect(e.message.hasSuffix("quota of 5 GB (5000000000 bytes)"), "\(e.message)")
        #expect(e.hint?.hasPrefix("that is this server's quota per app") == true, "\(e.hint ?? "")")
    }
}
