import BacklotBasics
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotFormat

#if canImport(Glibc)
import Glibc
#endif

/// What selectors pick from a real directory tree, and the bad inputs they must refuse.
@Suite struct SelectionTests {
    func select(_ selectors: String, in dir: TemporaryDirectory) throws -> SourceSelection {
        let (m, _) = try PackManifest.load(Array(SamplePack.manifest(selectors: selectors).utf8), source: "M.json")
        return try SourceSelection(manifest: m, sourceRoot: dir.at("src"))
    }

    func expectRefusal(
        _ selectors: String, in dir: TemporaryDirectory, _ phrase: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            let s = try select(selectors, in: dir)
            Issue.record(
                "expected a refusal containing '\(phrase)', got \(s.files.map(\.packPath))",
                sourceLocation: sourceLocation)
        } catch let e as BacklotError {
            #expect(e.code == .invalidSource || e.code == .invalidManifest, sourceLocation: sourceLocation)
            #expect(e.exitStatus == 2, sourceLocation: sourceLocation)
            #expect(e.description.contains(phrase), "\(e)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func directoryKeepsItsPrefixAndIncludesDotfiles() throws {
        let dir = try TemporaryDirectory("sel")
        defer { dir.remove() }
        try dir.write("src/packs/tutorial/welcome.txt", "hi")
        try dir.write("src/packs/tutorial/.pkey/pack.json", "{}")
        try dir.write("src/other.txt", "x")
        let s = try select(#"[{"directory": "packs/tutorial/"}]"#, in: dir)
        #expect(s.files.map(\.packPath) == ["packs/tutorial/.pkey/pack.json", "packs/tutorial/welcome.txt"])
    }

    @Test func directoryDotTakesTheWholeRoot() throws {
        let dir = try TemporaryDirectory("sel")
        defer { dir.remove() }
        try dir.write("src/a.txt", "a")
        try dir.write("src/d/b.txt", "b")
        let s = try select(#"[{"directory": "."}]"#, in: dir)
        #expect(s.files.map(\.packPath) == ["a.txt", "d/b.txt"])
    }

    @Test func mappingsPatternsAndExclusions() throws {
        let dir = try TemporaryDirectory("sel")
        defer { dir.remove() }
        for p in [
            "build/a.png", "raw/x.png", "raw/sub/y.png", "raw/skip.txt", "Audio/a.wav", "Audio/deep/b.wav",
            "Audio/c.mp3", "q/fa.a", "q/f1.a",
        ] {
            try dir.write("src/" + p, p)
        }
        let s = try select(
            """
            [{"fileSource": "build/a.png", "fileDestination": "Textures/a.png"},
             {"directorySource": "raw", "directoryDestination": "Textures/raw"},
             {"fileExclusion": "raw/skip.txt"},
             {"filePattern": "Audio/*.wav"},
             {"filePattern": "q/f[!0-9].?"}]
            """, in: dir)
        #expect(
            s.files.map(\.packPath) == [
                "Audio/a.wav", "Textures/a.png", "Textures/raw/sub/y.png", "Textures/raw/x.png", "q/fa.a",
            ])
        #expect(s.files.first { $0.packPath == "Textures/a.png" }?.sourcePath == "build/a.png")
    }

    @Test func doubleStarCrossesFoldersAndSingleStarDoesNot() throws {
        let dir = try TemporaryDirectory("sel")
        defer { dir.remove() }
        for p in ["Audio/a.wav", "Audio/deep/b.wav", "Audio/deep/er/c.wav"] { try dir.write("src/" + p, p) }
        #expect(try select(#"[{"filePattern": "Audio/*.wav"}]"#, in: dir).files.map(\.packPath) == ["Audio/a.wav"])
        #expect(try select(#"[{"filePattern": "Audio/**/*.wav"}]"#, in: dir).files.count == 3)
        try dir.write("src/top.wav", "t")
        #expect(try select(#"[{"filePattern": "*.wav"}]"#, in: dir).files.map(\.packPath) == ["top.wav"])
    }

    @Test func patternThatMatchesNothingWarns() throws {
        let dir = try TemporaryDirectory("sel")
        defer { dir.remove() }
        try dir.write("src/a.txt", "a")
        let s = try select(#"[{"file": "a.txt"}, {"filePattern": "*.wav"}, {"fileExclusion": "*.png"}]"#, in: dir)
        #expect(s.warnings.count == 2)
    }

    @Test func missingFileIsRefusedWithTheSelectorNamed() throws {
        let dir = try TemporaryDirectory("sel")
        defer { dir.remove() }
        try dir.write("src/a.txt", "a")
        expectRefusal(
            #"[{"file": "a.txt"}, {"file": "nope.txt"}]"#, in: dir,
            "fileSelectors[1] (file): \"nope.txt\" does not exist")
        expectRefusal(#"[{"directory": "nodir"}]"#, in: dir, "does not exist")
        expectRefusal(#"[{"file": "."}]"#, in: dir, "names the source root")
    }

    @Test func pathsWithParentOrAbsoluteAreRefused() throws {
        let dir = try TemporaryDirectory("sel")
        defer { dir.remove() }
        try dir.write("secret.txt", "s")
        try dir.write("src/a.txt", "a")
        expectRefusal(#"[{"file": "../secret.txt"}]"#, in: dir, "'..'")
        expectRefusal("[{\"file\": \"\(dir.at("secret.txt"))\"}]", in: dir, "absolute path")
    }

    @Test func symlinkToAFileInsideTheRootIsStoredAsAFile() throws {
        let dir = try TemporaryDirectory("sel")
        defer { dir.remove() }
        try dir.write("src/real.txt", "real")
        #expect(symlink("real.txt", dir.at("src/link.txt")) == 0)
        let s = try select(#"[{"directory": "."}]"#, in: dir)
        #expect(s.files.map(\.packPath) == ["link.txt", "real.txt"])
        #expect(s.files[0].size == 4)
    }

    @Test func symlinksOutOfTheRootDanglingOrToDirectoriesAreRefused() throws {
        let dir = try TemporaryDirectory("sel")
        defer { dir.remove() }
        try dir.write("outside.txt", "secret")
        try dir.write("src/a.txt", "a")
        try dir.write("src/d/b.txt", "b")
        #expect(symlink(dir.at("outside.txt"), dir.at("src/escape")) == 0)
        expectRefusal(#"[{"directory": "."}]"#, in: dir, "leaves the source root")
        expectRefusal(#"[{"file": "escape"}]"#, in: dir, "leaves the source root")
        // Excluding the link makes the rest packageable.
        #expect(try select(#"[{"directory": "."}, {"fileExclusion": "escape"}]"#, in: dir).files.count == 2)
        unlink(dir.at("src/escape"))
        #expect(symlink("nowhere", dir.at("src/dangling")) == 0)
        expectRefusal(#"[{"directory": "."}]"#, in: dir, "points nowhere")
        unlink(dir.at("src/dangling"))
        #expect(symlink("d", dir.at("src/dirlink")) == 0)
        expectRefusal(#"[{"directory": "."}]"#, in: dir, "symbolic link to a directory")
    }

    @Test func specialFilesAreRefusedUnlessExcluded() throws {
        let dir = try TemporaryDirectory("sel")
        defer { dir.remove() }
        try dir.write("src/a.txt", "a")
        #expect(mkfifo(dir.at("src/pipe"), 0o644) == 0)
        expectRefusal(#"[{"directory": "."}]"#, in: dir, "named pipe")
        #expect(
            try select(#"[{"directory": "."}, {"fileExclusion": "pipe"}]"#, in: dir).files.map(\.packPath) == ["a.txt"])
        unlink(dir.at("src/pipe"))

        // A real Unix-domain socket bound in the tree.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = dir.at("src/sock")
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8)
            raw.copyBytes(from: bytes.prefix(raw.count - 1))
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0)
        expectRefusal(#"[{"directory": "."}]"#, in: dir, "is a socket")
    }

    @Test func namesThatAreNotUTF8AreRefusedWithTheBytesShown() throws {
        let dir = try TemporaryDirectory("sel")
        defer { dir.remove() }
        try dir.write("src/a.txt", "a")
        var name = Array(dir.at("src/bad-").utf8) + [0xFF, 0xFE] + Array(".txt".utf8) + [0]
        let fd = name.withUnsafeMutableBufferPointer { p in
            p.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_CREAT | O_WRONLY, 0o644) }
        }
        #expect(fd >= 0)
        close(fd)
        expectRefusal(#"[{"directory": "."}]"#, in: dir, "bad-\\xFF\\xFE.txt")
    }

    @Test func onePackPathFromTwoSourcesIsRefusedAndTheSameFileTwiceWarns() throws {
        let dir = try TemporaryDirectory("sel")
        defer { dir.remove() }
        try dir.write("src/a.txt", "a")
        try dir.write("src/b.txt", "b")
        expectRefusal(
            #"[{"file": "a.txt"}, {"fileSource": "b.txt", "fileDestination": "a.txt"}]"#, in: dir,
            "two sources map to the pack path \"a.txt\"")
        let s = try select(#"[{"file": "a.txt"}, {"directory": "."}]"#, in: dir)
        #expect(s.files.map(\.packPath) == ["a.txt", "b.txt"])
        #expect(s.warnings.contains { $0.contains("packaged once") })
    }

    @Test func aFileCannotAlsoBeAFolder() throws {
        let dir = try TemporaryDirectory("sel")
        defer { dir.remove() }
        try dir.write("src/a.txt", "a")
        try dir.write("src/b.txt", "b")
        expectRefusal(
            #"[{"fileSource": "a.txt", "fileDestination": "x"}, {"fileSource": "b.txt", "fileDestination": "x/y"}]"#,
            in: dir, "needs it to be a folder")
        try dir.write("src/c.txt", "c")
        expectRefusal(
            #"[{"fileSource": "a.txt", "fileDestination": "x"}, {"fileSource": "c.txt", "fileDestination": "x.txt"}, {"fileSource": "b.txt", "fileDestination": "x/y"}]"#,
            in: dir, "needs it to be a folder")
    }

    @Test func anEmptyPackIsRefused() throws {
        let dir = try TemporaryDirectory("sel")
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.at("src/empty"), withIntermediateDirectories: true)
        expectRefusal(#"[{"directory": "empty"}]"#, in: dir, "match no file")
    }

    @Test func sourceRootResolvesAgainstTheManifestFolderAndMayClimb() throws {
        let json =
            #"{"assetPackID": "T", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"file": "a"}], "platforms": ["iOS"], "sourceRoot": "../stage"}"#
        let (m, _) = try PackManifest.load(Array(json.utf8), source: "M.json")
        #expect(
            SourceSelection.resolveSourceRoot(override: nil, manifest: m, manifestPath: "/p/tools/M.json") == "/p/stage"
        )
        #expect(
            SourceSelection.resolveSourceRoot(override: "/elsewhere", manifest: m, manifestPath: "/p/tools/M.json")
                == "/elsewhere")
    }
}
