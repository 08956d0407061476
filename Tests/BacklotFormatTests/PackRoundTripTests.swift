import BacklotBasics
import BacklotCrypto
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotFormat

@Suite struct PackRoundTripTests {
    @Test func packageVerifyExtractGivesBackTheSameFiles() throws {
        let dir = try TemporaryDirectory("rt")
        defer { dir.remove() }
        try SamplePack.writeTree(in: dir)
        let path = try SamplePack.build(in: dir)
        let pack = try PackReader(path: path)
        try pack.verify()
        #expect(pack.index.metadata.assetPackID.rawValue == "Sample")
        #expect(
            pack.index.files.map(\.path) == [
                "Levels/level1-copy.dat", "Levels/level1.dat", "Textures/noise.bin", "bin/tool", "empty", "readme.txt",
            ])
        #expect(pack.index.files.first { $0.path == "bin/tool" }?.mode == 0o755)
        #expect(pack.index.files.first { $0.path == "empty" }?.chunks == [])
        // The duplicate file is stored once: both files reference the same chunks.
        let a = pack.index.files[0]
        let b = pack.index.files[1]
        #expect(a.chunks == b.chunks)

        try PackExtractor(pack: pack).extract(to: dir.at("out"))
        for f in pack.index.files {
            #expect(try dir.read("out/" + f.path) == dir.read("src/" + f.path), "\(f.path)")
        }
        var st = stat()
        #expect(stat(dir.at("out/bin/tool"), &st) == 0 && st.st_mode & 0o777 == 0o755)
        #expect(try dir.listing().filter { $0.hasPrefix(".") }.isEmpty, "no staging folder left")
    }

    @Test func theSameInputGivesTheSameBytesWhateverTheThreadsOrOrderOrTimes() throws {
        let one = try TemporaryDirectory("det1")
        let two = try TemporaryDirectory("det2")
        defer {
            one.remove()
            two.remove()
        }
        try SamplePack.writeTree(in: one)
        // Same contents, created in reverse order with different modification times.
        var g = SeededGenerator(seed: 42)
        let readme = g.text(20_000)
        let noise = g.bytes(300_000)
        let big = g.text(400_000)
        let tool = g.bytes(5000)
        try two.write("src/bin/tool", tool, mode: 0o700)
        try two.write("src/empty", [])
        try two.write("src/Levels/level1-copy.dat", big)
        try two.write("src/Levels/level1.dat", big)
        try two.write("src/Textures/noise.bin", noise)
        try two.write("src/readme.txt", readme, mode: 0o600)
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSince1970: 1000)], ofItemAtPath: two.at("src/readme.txt"))
        let a = try SamplePack.build(in: one, jobs: 1)
        let b = try SamplePack.build(in: two, jobs: 4)
        #expect(try Data(contentsOf: URL(fileURLWithPath: a)) == Data(contentsOf: URL(fileURLWithPath: b)))
    }

    @Test func chunkIDsSurviveAChangeOfCompressionLevel() throws {
        let dir = try TemporaryDirectory("lvl")
        defer { dir.remove() }
        try SamplePack.writeTree(in: dir)
        let fast = try PackReader(path: SamplePack.build(in: dir, name: "1.pack", level: 1))
        let slow = try PackReader(path: SamplePack.build(in: dir, name: "19.pack", level: 19))
        #expect(fast.index.chunks.map(\.id) == slow.index.chunks.map(\.id))
        #expect(fast.fileSize != slow.fileSize)
        #expect(PackDiff(old: fast.index, new: slow).downloadChunks == 0)
    }

    @Test func userInfoAndPolicySurviveTheRoundTrip() throws {
        let dir = try TemporaryDirectory("meta")
        defer { dir.remove() }
        try SamplePack.writeTree(in: dir)
        let json =
            #"{"assetPackID": "com.example.levels", "downloadPolicy": {"essential": {"installationEventTypes": ["firstInstallation"]}}, "fileSelectors": [{"directory": "Levels"}], "platforms": ["iOS", "linux"], "userInfo": {"b": 2.50, "a": "x"}}"#
        let pack = try PackReader(path: SamplePack.build(in: dir, manifestJSON: json))
        #expect(pack.index.metadata.downloadPolicy == .essential(installationEventTypes: [.firstInstallation]))
        #expect(pack.index.metadata.platforms == [.iOS, .linux])
        #expect(pack.index.metadata.userInfo?.serialized() == #"{"b":2.50,"a":"x"}"#)
    }

    @Test func diffCountsOnlyTheChunksAClientLacks() throws {
        let dir = try TemporaryDirectory("diff")
        defer { dir.remove() }
        try SamplePack.writeTree(in: dir)
        let v1 = try PackReader(path: SamplePack.build(in: dir, name: "v1.pack"))
        // Edit a few bytes in the middle of one big file.
        var level = try dir.read("src/Levels/level1.dat")
        level.replaceSubrange(200_000..<200_010, with: Array("EDITEDEDIT".utf8))
        try dir.write("src/Levels/level1.dat", level)
        let v2 = try PackReader(path: SamplePack.build(in: dir, name: "v2.pack"))
        let d = PackDiff(old: v1.index, new: v2)
        #expect(d.downloadChunks >= 1 && d.downloadChunks <= 3)
        #expect(d.downloadBytes < v2.fileSize / 4)
        #expect(d.filesChanged == 1 && d.filesUnchanged == 5)
        #expect(
            d.downloadBytes == d.metadataBytes
                + v2.index.chunks.filter { c in !v1.index.chunks.contains { $0.id == c.id } }.reduce(0) {
                    $0 + UInt64($1.compressedSize)
                })
    }

    @Test func failedPackagingLeavesNoOutputAndNeverReplacesWithoutForce() throws {
        let dir = try TemporaryDirectory("fail")
        defer { dir.remove() }
        try SamplePack.writeTree(in: dir)
        try dir.write("existing.pack", "keep me")
        let (m, _) = try PackManifest.load(Array(SamplePack.manifest().utf8), source: "M.json")
        let selection = try SourceSelection(manifest: m, sourceRoot: dir.at("src"))
        #expect(throws: BacklotError.self) {
            try PackWriter().write(manifest: m, selection: selection, to: dir.at("existing.pack"))
        }
        #expect(try dir.read("existing.pack") == Array("keep me".utf8))
        // A file that shrinks between selection and reading fails the build, and nothing is left.
        try dir.write("src/readme.txt", "short now")
        #expect(throws: BacklotError.self) {
            try PackWriter().write(manifest: m, selection: selection, to: dir.at("new.pack"))
        }
        #expect(try dir.listing() == ["existing.pack", "src"])
    }
}

#if canImport(Glibc)
import Glibc
#endif
