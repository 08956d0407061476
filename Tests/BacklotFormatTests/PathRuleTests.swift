import BacklotBasics
import BacklotCrypto
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotFormat

/// The path rule (docs/format.md §7): paths are byte strings, split on the byte `/`, with `.` and
/// `..` compared as bytes. Swift's `Character` view would glue a `/` or `..` to a following
/// combining mark or joiner; the kernel does not.
@Suite struct PathRuleTests {
    /// Marks that extend the grapheme before them: combining acute, zero-width joiner, variation
    /// selector, combining enclosing circle, a Hangul vowel that joins a preceding jamo.
    static let extenders: [String] = ["\u{301}", "\u{200D}", "\u{FE0F}", "\u{20DD}", "\u{1160}", "\u{E0100}"]

    @Test(arguments: extenders) func aSeparatorOrParentFollowedByAMarkIsStillOneToTheKernel(mark: String) {
        let hostile = [
            "../\(mark)evil", "a/../\(mark)b", "a/\(mark)/../../b", "x/..//\(mark)y", "/\(mark)etc/passwd",
            "a//\(mark)b", "./../\(mark)x", "a/./\(mark)/../../b",
        ]
        for path in hostile {
            guard case .failure = SelectorPath.normalize(path, allowRoot: false) else {
                Issue.record("accepted \(path.unicodeScalars.map { String($0.value, radix: 16) })")
                continue
            }
        }
        // The same marks inside a name are just bytes of that name.
        for path in ["..\(mark)", "a/..\(mark)/b", ".\(mark)", "\(mark)x/y"] {
            guard case .success(let normal) = SelectorPath.normalize(path, allowRoot: false) else {
                Issue.record("refused the ordinary name \(path.unicodeScalars.map { String($0.value, radix: 16) })")
                continue
            }
            #expect(BytePath.same(normal, path))
        }
        #expect(BytePath.components("../\(mark)x") == ["..", "\(mark)x"])
        #expect(!BytePath.isSafeRelative("a/../\(mark)b"))
    }

    @Test func globsSplitOnTheByteAndMatchByScalar() throws {
        let star = try Glob("*")
        #expect(!star.matches("a/\u{301}b"), "* must not cross a '/' followed by a mark")
        #expect(try Glob("a/*").matches("a/\u{301}b"))
        #expect(try Glob("*/x").matches("\u{301}/x"))
        // NFC and NFD are different names: a pattern matches the bytes it was written with.
        #expect(try Glob("caf\u{E9}").matches("caf\u{E9}"))
        #expect(!(try Glob("caf\u{E9}").matches("cafe\u{301}")))
        #expect(try Glob("caf?").matches("caf\u{E9}"))
        #expect(!(try Glob("caf?").matches("cafe\u{301}")), "? is one scalar")
        #expect(try Glob("cafe?").matches("cafe\u{301}"))
    }

    @Test func aCraftedPackWithAHiddenParentIsRefusedAndWritesNothing() throws {
        let dir = try TemporaryDirectory("hidden-parent")
        defer { dir.remove() }
        for mark in Self.extenders {
            let path = dir.at("p.pack")
            try CraftedPack(files: [
                .init(path: "../\(mark)evil", bytes: Array("pwned".utf8)), .init(path: "ok", bytes: [1]),
            ]).write(to: path)
            #expect(throws: BacklotError.self) { try PackReader(path: path) }
            try? FileManager.default.createDirectory(atPath: dir.at("out-parent"), withIntermediateDirectories: true)
            #expect(throws: BacklotError.self) {
                try PackExtractor(pack: try PackReader(path: path)).extract(to: dir.at("out-parent/out"))
            }
            #expect(try dir.listing().allSatisfy { !$0.contains("evil") })
            #expect(try FileSystem.entryNames(dir.at("out-parent")).isEmpty)
        }
    }

    @Test func aDestinationWithAHiddenParentIsAnInvalidManifest() throws {
        for mark in Self.extenders {
            let json =
                #"{"assetPackID": "P", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"fileSource": "a", "fileDestination": "../\#(mark)x"}], "platforms": ["linux"]}"#
            let result = try PackManifest.parse(Array(json.utf8), source: "m.json")
            #expect(result.manifest == nil, "accepted a destination out of the pack")
            #expect(result.diagnostics.contains { $0.rule == "path.parent" })
        }
    }

    /// Two names that differ only by normalisation are two files on Linux: both are packaged,
    /// kept apart, verified and extracted with their own bytes.
    @Test func namesThatDifferOnlyByNormalisationAreTwoFiles() throws {
        let dir = try TemporaryDirectory("nfc-nfd")
        defer { dir.remove() }
        let nfc = "caf\u{E9}.txt"
        let nfd = "cafe\u{301}.txt"
        let folderNFC = "d\u{E9}j\u{E0}"
        let folderNFD = "de\u{301}ja\u{300}"
        try dir.write("src/\(nfc)", Array("composed".utf8))
        try dir.write("src/\(nfd)", Array("decomposed".utf8))
        try dir.write("src/\(folderNFC)/a", Array("in composed".utf8))
        try dir.write("src/\(folderNFD)/a", Array("in decomposed".utf8))
        let pack = try SamplePack.build(in: dir, manifestJSON: SamplePack.manifest(id: "Names"))
        let reader = try PackReader(path: pack)
        #expect(reader.index.files.count == 4)
        #expect(Set(reader.index.files.map { BytePath.Key($0.path) }).count == 4)
        try reader.verify()
        try PackExtractor(pack: reader).extract(to: dir.at("out"))
        let names = try FileSystem.entryNames(dir.at("out")).map { BytePath.Key(String(decoding: $0, as: UTF8.self)) }
        #expect(Set(names) == Set([nfc, nfd, folderNFC, folderNFD].map(BytePath.Key.init)))
        #expect(try dir.read("out/\(nfc)") == Array("composed".utf8))
        #expect(try dir.read("out/\(nfd)") == Array("decomposed".utf8))
        #expect(try dir.read("out/\(folderNFC)/a") == Array("in composed".utf8))
        #expect(try dir.read("out/\(folderNFD)/a") == Array("in decomposed".utf8))
    }

    /// A file swapped for a link (to a file outside the root, or through a folder swapped for a
    /// link) after selection is refused, never followed.
    @Test func aLinkSwappedInAfterSelectionIsRefused() throws {
        let dir = try TemporaryDirectory("swap")
        defer { dir.remove() }
        try dir.write("outside/secret", Array("secret!".utf8))
        try dir.write("outside/sub/f", Array("secret!".utf8))
        try dir.write("src/f", Array("public!".utf8))
        try dir.write("src/sub/f", Array("public!".utf8))
        let (manifest, _) = try PackManifest.load(Array(SamplePack.manifest(id: "Swap").utf8), source: "m")
        for victim in ["f", "sub"] {
            let selection = try SourceSelection(manifest: manifest, sourceRoot: dir.at("src"))
            let moved = dir.at("src/\(victim).orig")
            try FileManager.default.moveItem(atPath: dir.at("src/\(victim)"), toPath: moved)
            try FileManager.default.createSymbolicLink(
                atPath: dir.at("src/\(victim)"),
                withDestinationPath: dir.at(victim == "f" ? "outside/secret" : "outside/sub"))
            do {
                _ = try PackWriter().write(manifest: manifest, selection: selection, to: dir.at("swap.pack"))
                Issue.record("packaged through a link swapped in for \(victim)")
            } catch let e as BacklotError {
                #expect(e.code == .invalidSource, "\(e)")
            }
            #expect(!FileSystem.exists(dir.at("swap.pack")))
            try FileManager.default.removeItem(atPath: dir.at("src/\(victim)"))
            try FileManager.default.moveItem(atPath: moved, toPath: dir.at("src/\(victim)"))
        }
        // A FIFO swapped in is refused too (and never blocks the writer).
        let selection = try SourceSelection(manifest: manifest, sourceRoot: dir.at("src"))
        try FileManager.default.removeItem(atPath: dir.at("src/f"))
        #expect(mkfifo(dir.at("src/f"), 0o644) == 0)
        #expect(throws: BacklotError.self) {
            _ = try PackWriter().write(manifest: manifest, selection: selection, to: dir.at("fifo.pack"))
        }
    }

    @Test func directoryHandleOpensOnlyRegularFilesBeneathIt() throws {
        let dir = try TemporaryDirectory("beneath")
        defer { dir.remove() }
        try dir.write("root/a/file", [1, 2, 3])
        try dir.write("elsewhere", [9])
        try FileManager.default.createSymbolicLink(
            atPath: dir.at("root/link"), withDestinationPath: dir.at("root/a/file"))
        try FileManager.default.createSymbolicLink(
            atPath: dir.at("root/dirlink"), withDestinationPath: dir.at("root/a"))
        let root = try DirectoryHandle(path: dir.at("root"))
        let (fd, size) = try root.openRegularFile("a/file")
        fd.close()
        #expect(size == 3)
        for bad in ["link", "dirlink/file", "../elsewhere", "a/../../elsewhere", "a", dir.at("elsewhere")] {
            #expect(throws: BacklotError.self, "opened \(bad)") { _ = try root.openRegularFile(bad) }
        }
    }

    /// Every path that makes files visible checks every file hash, not only the chunks.
    @Test func aWrongFileHashIsRefusedByVerifyAndExtract() throws {
        let dir = try TemporaryDirectory("file-hash")
        defer { dir.remove() }
        let cases: [(String, [CraftedPack.File])] = [
            ("one chunk", [.init(path: "a", bytes: Array(repeating: 7, count: 1000), digest: SHA256.hash([1]))]),
            (
                "many chunks",
                [
                    .init(
                        path: "big", bytes: (0..<(300 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 31) },
                        digest: SHA256.hash([2]))
                ]
            ),
            ("empty", [.init(path: "empty", bytes: [], digest: SHA256.hash([3])), .init(path: "z", bytes: [1])]),
        ]
        for (name, files) in cases {
            let path = dir.at("\(name).pack")
            try CraftedPack(files: files, chunkSize: 64 << 10).write(to: path)
            let reader = try PackReader(path: path)
            #expect(throws: BacklotError.self, "verify: \(name)") { try reader.verify() }
            do {
                try PackExtractor(pack: reader).extract(to: dir.at("out-\(name)"))
                Issue.record("extracted \(name) with a wrong file hash")
            } catch let e as BacklotError {
                #expect(e.code == .corruptArchive)
                #expect(e.message.contains("SHA-256"), "\(e)")
            }
            #expect(!FileSystem.exists(dir.at("out-\(name)")))
        }
    }

    /// package never writes a pack that verify refuses: an escaped pattern that spells "..", or
    /// metadata over its limit, is refused before anything is written.
    @Test func packageRefusesWhatAReaderWouldRefuse() throws {
        let dir = try TemporaryDirectory("self-check")
        defer { dir.remove() }
        try dir.write("src/afile", [1, 2, 3])
        let escaped = SamplePack.manifest(id: "Esc", selectors: #"[{"filePattern": "\\.\\./src/a*"}]"#)
        #expect(throws: BacklotError.self) {
            try SamplePack.build(in: dir, manifestJSON: escaped, sourceRoot: dir.at("src"))
        }
        let huge =
            #"{"assetPackID": "Big", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "."}], "platforms": ["linux"], "userInfo": {"blob": ""#
            + String(repeating: "x", count: 1 << 20) + #""}}"#
        do {
            try SamplePack.build(in: dir, manifestJSON: huge, name: "big.pack")
            Issue.record("packaged metadata over the limit")
        } catch let e as BacklotError {
            #expect(e.code == .invalidSource || e.code == .invalidManifest, "\(e)")
        }
        #expect(!FileSystem.exists(dir.at("big.pack")) && !FileSystem.exists(dir.at("out.pack")))
    }

    /// A path is at most 256 names deep, in the one check a pack's reader and `package` share,
    /// and in the rule a manifest's selectors are normalised by: a device removes an installed
    /// release one open folder per level, and that walk goes as deep as any path may.
    @Test func aPathIsAtMostTwoHundredFiftySixNamesDeep() {
        let deepest = Array(repeating: "d", count: SelectorPath.maximumDepth).joined(separator: "/")
        #expect(SelectorPath.isNormalFilePath(Array(deepest.utf8)))
        #expect(!SelectorPath.isNormalFilePath(Array((deepest + "/f").utf8)))
        guard case .success = SelectorPath.normalize(deepest, allowRoot: false) else {
            Issue.record("a path of \(SelectorPath.maximumDepth) names was refused")
            return
        }
        guard case .failure(let problem) = SelectorPath.normalize(deepest + "/f", allowRoot: false) else {
            Issue.record("a path of \(SelectorPath.maximumDepth + 1) names was accepted")
            return
        }
        #expect(problem.rule == "path.deep")
        #expect(SelectorPath.maximumDepth <= DirectoryHandle.removalDepth)
    }

    @Test func oneIndexLimitFromTheHeaderOn() throws {
        // The header refuses an index over the limit, and one too short to be an index.
        for length in [PackHeader.maximumIndexLength + 1, 0, 3] {
            let header = PackHeader(indexOffset: 64, indexLength: length, indexDigest: SHA256.hash([]))
            #expect(throws: BacklotError.self) {
                _ = try PackHeader.decode(header.encoded, fileSize: 64 + length, source: "h")
            }
        }
        #expect(PackHeader.maximumIndexLength == 64 << 20)
    }
}
