import BacklotBasics
import BacklotContainer
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotClient

/// A release's name is read back from the container's database, which the app can write, and it
/// names the folder an update removes: one that is not a release name is never made a path.
@Suite(.serialized) struct StoredReleaseNameTests {
    /// The installed row's name is made a path out of the pack's folder (to a folder beside the
    /// container, whose own folder cannot be written): it is not an installed release, the next
    /// fetch installs the pack again, and nothing outside the container is changed or removed.
    @Test func aStoredReleaseNameThatClimbsOutRemovesNothing() async throws {
        let f = try ClientFixture()
        try f.publish()
        let manager = try f.manager()
        _ = try await manager.fetch(packWithID: "Levels")
        let victim = f.dir.at("victim")
        try FileSystem.makeDirectories(victim + "/inner")
        try Data("keep".utf8).write(to: URL(fileURLWithPath: victim + "/inner/keep.txt"))
        #expect(chmod(victim + "/inner", 0o500) == 0)
        defer { chmod(victim + "/inner", 0o755) }

        let container = try ClientContainer(path: f.dir.at("container"))
        // packs/ID-HASH/../../../victim is the folder beside the container (the name left in the row).
        for name in [
            String(repeating: "a", count: 64) + "/../..", "/" + victim, "../../../victim/.", "../../../victim",
        ] {
            try container.store.database.transaction { tx in
                _ = try tx.run("UPDATE installed SET digest = ? WHERE id = 'Levels'", [.text(name)])
            }
            #expect(try container.installed("Levels") == nil, "\(name)")
            #expect(try container.installed().isEmpty, "\(name)")
            #expect(try container.installedNames().isEmpty, "\(name)")
        }
        try f.publish(edit: true)
        #expect(try await manager.fetch(packWithID: "Levels").version == 2)
        #expect(FileManager.default.contents(atPath: victim + "/inner/keep.txt") == Data("keep".utf8))
        var st = stat()
        #expect(lstat(victim + "/inner", &st) == 0 && st.st_mode & 0o777 == 0o500)
        #expect(try container.installed("Levels")?.version == 2)
    }

    /// What a release name may be: the index's SHA-256 in lowercase hex, then a variant choice.
    @Test func aReleaseNameHasOneShape() {
        let digest = String(repeating: "0123456789abcdef", count: 4)
        for good in [digest, digest + ".tcf_astc", digest + ".tier_2", digest + ".tcf_astc.tier_2"] {
            #expect(ReleaseName.isWellFormed(good), "\(good)")
        }
        for bad in [
            "", ".", "..", "../x", digest.uppercased(), String(digest.dropLast()), digest + "0", digest + "/x",
            digest + ".", digest + "./..", digest + ".tier_2/../..", digest + ".unknown", "/" + digest,
        ] {
            #expect(!ReleaseName.isWellFormed(bad), "\(bad)")
        }
    }
}
