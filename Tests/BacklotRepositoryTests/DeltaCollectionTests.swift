import BacklotCrypto
import BacklotProtocol
import BacklotStore
import Foundation
import Testing

@testable import BacklotRepository

/// The deltas into a version go with it: deleting the last kept version of a pack digest removes
/// the delta files into it, its list of deltas and their rows, on every backend; a delta from a
/// deleted version stays while the version it leads to is kept; and delta files written before
/// deltas were recorded are removed when no kept list names them, recorded when one does.
@Suite(.serialized) struct DeltaCollectionTests {
    typealias Fixture = RepositoryTests.Fixture
    static let app = "com.example.game"
    static let folder = PublishedTreeLayout.deltasFolder

    /// The rows of `published_deltas`: SHA-256 → (version, target).
    static func rows(_ f: Fixture) throws -> [String: (version: Int, target: String?)] {
        var rows: [String: (version: Int, target: String?)] = [:]
        for r in try f.repo.db.read({ try $0.query("SELECT sha256, version, target FROM published_deltas", []) }) {
            rows[try #require(r["sha256"]?.string)] = (
                try #require(r["version"]?.integer(as: Int.self)), r["target"]?.string
            )
        }
        return rows
    }

    static func files(_ f: Fixture) throws -> Set<String> { Set(try f.repo.tree.fileNames(in: folder)) }

    /// Versions 1 and 2 of the pack uploaded and processed (version 2 with a delta from 1);
    /// returns version 2. The caller removes the fixture's folder.
    static func twoVersions(_ f: Fixture) throws -> VersionInfo {
        #expect(try f.upload(seed: 1).state == .complete)
        let two = try f.upload(seed: 2)
        #expect(two.state == .complete)
        return two
    }

    @Test(arguments: Backend.allCases) func theDeltasIntoADeletedVersionGoWithItAndThoseFromItStay(
        _ backend: Backend
    ) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        let one = try f.upload(seed: 1)
        let two = try f.upload(seed: 2)
        let three = try f.upload(seed: 3)
        #expect([one, two, three].allSatisfy { $0.state == .complete })
        let rows = try Self.rows(f)
        let intoTwo = rows.filter { $0.value.version == two.number }
        let intoThree = rows.filter { $0.value.version == three.number }
        #expect(intoTwo.count == 1, "one delta into version 2 (from 1): \(rows)")
        #expect(intoThree.count == 2, "two deltas into version 3 (from 1 and 2): \(rows)")
        let twoDigest = try #require(intoTwo.first?.value.target)
        let threeDigest = try #require(intoThree.first?.value.target)
        #expect(Set(intoThree.map(\.value.target)) == [threeDigest] && twoDigest != threeDigest)
        let before = try Self.files(f)
        for sha in rows.keys { #expect(before.contains("\(sha).delta"), "\(sha) is written") }
        #expect(before.contains("\(twoDigest).json") && before.contains("\(threeDigest).json"))

        // Version 3 deleted: its two deltas, their rows and its list go; version 2's stay.
        try f.repo.uploads.deleteVersion(app: Self.app, pack: "Levels", number: three.number)
        let afterThree = try Self.files(f)
        #expect(afterThree == before.subtracting(intoThree.keys.map { "\($0).delta" } + ["\(threeDigest).json"]))
        #expect(Set(try Self.rows(f).keys) == Set(intoTwo.keys))

        // Version 1 deleted: the delta from it into version 2 stays (devices hold version 1).
        try f.repo.uploads.deleteVersion(app: Self.app, pack: "Levels", number: one.number)
        #expect(try Self.files(f) == afterThree)
        try f.repo.releases.release(app: Self.app, pack: "Levels", version: two.number, channel: .internal)
        #expect(try f.catalog(.internal).packs[0].release.deltas.count == 1)

        // The same bytes as version 3 uploaded again: its deltas are published again and recorded
        // as the new version's.
        let again = try f.upload(seed: 3)
        #expect(again.state == .complete)
        let rowsAgain = try Self.rows(f).filter { $0.value.target == threeDigest }
        #expect(rowsAgain.count == 1 && rowsAgain.allSatisfy { $0.value.version == again.number }, "\(rowsAgain)")
        let filesAgain = try Self.files(f)
        #expect(filesAgain.contains("\(threeDigest).json"))
        for sha in rowsAgain.keys { #expect(filesAgain.contains("\(sha).delta")) }
        // Collecting again changes nothing while every version is kept.
        try f.repo.uploads.collectGarbage()
        #expect(try Self.files(f) == filesAgain)
    }

    /// A version whose bytes another kept version also has (another app's): deleting one keeps
    /// the list and the deltas the other's catalog names.
    @Test(arguments: [Backend.sqlite, .postgresql]) func aPackDigestKeptByAnotherAppKeepsItsDeltas(
        _ backend: Backend
    ) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        try f.repo.apps.create("com.example.other")
        try f.repo.apps.createPack(app: "com.example.other", id: "Levels")
        #expect(try f.upload(seed: 1).state == .complete)
        let two = try f.upload(seed: 2)
        #expect(try f.upload(app: "com.example.other", seed: 1).state == .complete)
        let otherTwo = try f.upload(app: "com.example.other", seed: 2)
        #expect(two.state == .complete && otherTwo.state == .complete)
        let before = try Self.files(f)
        let rows = try Self.rows(f)
        #expect(rows.count == 1, "the same base and target bytes in both apps: one delta file, \(rows)")
        #expect(rows.first?.value.version == two.number, "named by the version it was made for: \(rows)")
        // The version the row names goes; the other app's version of the same bytes keeps it.
        try f.repo.uploads.deleteVersion(app: Self.app, pack: "Levels", number: two.number)
        #expect(try Self.files(f) == before)
        #expect(Set(try Self.rows(f).keys) == Set(rows.keys))
        try f.repo.uploads.deleteVersion(app: "com.example.other", pack: "Levels", number: otherTwo.number)
        let left = try Self.files(f)
        #expect(left.isEmpty, "no version of that digest is kept: \(left)")
        #expect(try Self.rows(f).isEmpty)
    }

    /// A version being processed has no pack digest of its own yet: it claims the digest of its
    /// bytes before it reads the deltas listed into them (made for an earlier version of the same
    /// bytes), so deleting that earlier version meanwhile does not collect them. Shown with a
    /// version set to `PROCESSING` by hand claiming the digest as processing does, against the
    /// same deletion without the claim.
    @Test(arguments: [Backend.sqlite, .postgresql]) func aVersionBeingProcessedKeepsTheDeltasListedIntoItsBytes(
        _ backend: Backend
    ) throws {
        for claiming in [true, false] {
            let f = try Fixture(backend)
            defer { f.dir.remove() }
            let two = try Self.twoVersions(f)
            let rows = try Self.rows(f)
            let digest = try #require(rows.first?.value.target)
            let waiting = try f.repo.uploads.createVersion(app: Self.app, pack: "Levels", size: 1000)
            _ = try f.repo.db.runAlone(
                "UPDATE versions SET state = 'PROCESSING' WHERE number = ?", [.integer(Int64(waiting.number))])
            if claiming {
                try f.repo.db.transaction {
                    try Uploads.claimPackDigest(
                        &$0, app: Self.app, pack: "Levels", number: Int64(waiting.number), digest: digest)
                }
            }
            try f.repo.uploads.deleteVersion(app: Self.app, pack: "Levels", number: two.number)
            let files = try Self.files(f)
            let keptAll = files.contains("\(digest).json") && rows.keys.allSatisfy { files.contains("\($0).delta") }
            #expect(keptAll == claiming, "claiming \(claiming): \(files)")
            #expect(files.isEmpty == !claiming)
        }
    }

    /// Every version processed claims its pack digest, with bases or without (the first version,
    /// or `--delta-bases 0`): the list of deltas into its bytes that its release will name is kept
    /// for it before it is COMPLETE. A claim for a version not being processed changes nothing.
    @Test func everyProcessedVersionClaimsItsPackDigestWithOrWithoutBases() throws {
        let f = try Fixture(.sqlite)
        defer { f.dir.remove() }
        func digests(_ number: Int) throws -> (claimed: String?, index: String?) {
            let row = try #require(
                try f.repo.db.read {
                    try $0.query(
                        "SELECT claimed_digest, index_sha256 FROM versions WHERE number = ?", [.integer(Int64(number))])
                }.first)
            return (row["claimed_digest"]?.string, row["index_sha256"]?.string)
        }
        f.repo.publication.setDeltaBases(0)
        let one = try f.upload(seed: 1)
        f.repo.publication.setDeltaBases(3)
        let two = try f.upload(seed: 2)
        for version in [one, two] {
            #expect(version.state == .complete)
            let found = try digests(version.number)
            #expect(found.claimed != nil && found.claimed == found.index, "version \(version.number): \(found)")
        }
        try f.repo.db.transaction {
            try Uploads.claimPackDigest(&$0, app: Self.app, pack: "Levels", number: Int64(one.number), digest: "ab")
        }
        #expect(try digests(one.number).claimed == digests(one.number).index)
    }

    /// A version that failed once its deltas were published (its processing stopped at the last
    /// step) is collected by the lease holder's shared work when asked, with no deletion.
    @Test(arguments: [Backend.sqlite, .postgresql]) func theSharedWorkCollectsTheDeltasOfAVersionThatFailedLate(
        _ backend: Backend
    ) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        let two = try Self.twoVersions(f)
        _ = try f.repo.db.runAlone(
            "UPDATE versions SET state = 'FAILED' WHERE number = ?", [.integer(Int64(two.number))])
        let before = try Self.files(f)
        #expect(!before.isEmpty)
        try f.repo.shareWork(resigning: true)
        #expect(try Self.files(f) == before, "collected only when asked")
        try f.repo.shareWork(resigning: true, collectingGarbage: true)
        let left = try Self.files(f)
        let rows = try Self.rows(f)
        #expect(left.isEmpty && rows.isEmpty, "\(left)")
    }

    /// A row recorded before targets were, for a version that never got a pack digest: kept and
    /// given its target when a kept list names its file, removed with its file otherwise.
    @Test(arguments: [Backend.sqlite, .postgresql]) func aRowWithoutATargetIsKeptWhenAKeptListNamesItsFile(
        _ backend: Backend
    ) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        _ = try Self.twoVersions(f)
        let (sha, row) = try #require(try Self.rows(f).first)
        let stray = SHA256.hash(Array("a delta of a version that failed".utf8)).hex
        try f.repo.tree.write(Array("not a delta".utf8), at: PublishedTreeLayout.delta(sha256: stray).path)
        _ = try f.repo.db.runAlone("UPDATE published_deltas SET target = NULL", [])
        _ = try f.repo.db.runAlone(
            "INSERT INTO published_deltas(sha256, app, pack, version) VALUES (?, ?, 'Levels', 99)",
            [.text(stray), .text(Self.app)])
        try f.repo.uploads.collectGarbage()
        let files = try Self.files(f)
        #expect(files.contains("\(sha).delta") && !files.contains("\(stray).delta"), "\(files)")
        let after = try Self.rows(f)
        #expect(Set(after.keys) == [sha] && after[sha]?.target == row.target, "\(after)")
    }

    /// Delta files written before deltas were recorded (no row): one no list names is removed, one
    /// a kept version's list names is kept and recorded, with the digest it leads to.
    @Test(arguments: [Backend.sqlite, .postgresql]) func unrecordedDeltaFilesAreRemovedUnlessAKeptListNamesThem(
        _ backend: Backend
    ) throws {
        let f = try Fixture(backend)
        defer { f.dir.remove() }
        let two = try Self.twoVersions(f)
        let rows = try Self.rows(f)
        let (sha, row) = try #require(rows.first)
        _ = try f.repo.db.runAlone("DELETE FROM published_deltas", [])
        let stray = SHA256.hash(Array("a delta no list names".utf8)).hex
        try f.repo.tree.write(Array("not a delta".utf8), at: PublishedTreeLayout.delta(sha256: stray).path)
        #expect(try Self.files(f).contains("\(stray).delta"))
        try f.repo.uploads.collectGarbage()
        let files = try Self.files(f)
        #expect(!files.contains("\(stray).delta"))
        #expect(files.contains("\(sha).delta"))
        let recorded = try Self.rows(f)
        #expect(recorded.count == 1 && recorded[sha]?.target == row.target && recorded[sha]?.version == two.number)
    }
}
