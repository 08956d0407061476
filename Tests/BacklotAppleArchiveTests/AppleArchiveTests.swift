import BacklotAppleArchive
import BacklotBasics
import BacklotCodecs
import BacklotCrypto
import BacklotFormat
import BacklotTestSupport
import Foundation
import Testing

/// Apple Archives both ways, against codecs and a reader that are not ours: `scripts/aar-tool`
/// (Python's zlib and lzma, PyPI's lzfse — Apple's reference LZFSE — and lz4) writes archives of
/// every compression that our reader must read byte for byte, and lists the entries of the
/// archives our writer makes; damaged archives are refused naming the entry or block.
@Suite(.serialized) struct AppleArchiveTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let python = root + "/.build/venv/bin/python3"

    /// Runs scripts/aar-tool with the venv's Python (bootstrap installs lzfse and lz4 there).
    func aarTool(_ arguments: [String]) throws -> ChildProcess.Outcome {
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            throw BacklotError(.io, "no \(Self.python): run scripts/bootstrap (it installs lzfse and lz4 there)")
        }
        return try ChildProcess.run(
            executable: Self.python, arguments: [Self.root + "/scripts/aar-tool"] + arguments,
            environment: ProcessInfo.processInfo.environment, until: .now + .seconds(120))
    }

    /// A tree of text, random bytes (more than one 4 MiB block in all), an empty file and folders.
    func writeTree(_ dir: TemporaryDirectory, seed: UInt64 = 3) throws -> [String: SHA256Digest] {
        var g = SeededGenerator(seed: seed)
        let files: [String: [UInt8]] = [
            "readme.txt": g.text(30_000), "Textures/noise.bin": g.bytes(3_000_000),
            "Levels/level1.dat": g.text(2_500_000), "Levels/empty.dat": [], "Audio/voice/a.txt": g.text(10),
        ]
        for (path, bytes) in files { try dir.write("src/" + path, bytes) }
        return files.mapValues { SHA256.hash($0) }
    }

    struct Listed: Decodable, Hashable {
        let type: String
        let path: String
        let size: Int
        let sha256: String
    }

    func read(_ path: String) throws -> (AppleArchiveReader.Summary, [String: SHA256Digest]) {
        var digests: [String: SHA256Digest] = [:]
        let summary = try AppleArchiveReader(AppleArchiveFile(path: path), name: path).readAll { entry in
            guard entry.kind == .file else { return nil }
            let box = HashBox()
            return .init(write: { box.bytes += Array($0) }, finish: { digests[entry.path] = SHA256.hash(box.bytes) })
        }
        return (summary, digests)
    }

    final class HashBox { var bytes: [UInt8] = [] }

    @Test(arguments: ["lzfse", "zlib", "lzma", "lz4", "none"])
    func archivesAnIndependentWriterMakesAreReadByteForByte(_ compression: String) throws {
        let dir = try TemporaryDirectory("aar-read-\(compression)")
        defer { dir.remove() }
        let expected = try writeTree(dir)
        let made = try aarTool(["write", "--compression", compression, dir.at("src"), dir.at("x.aar")])
        #expect(made.succeeded, "\(String(decoding: made.output, as: UTF8.self))")
        let head = try dir.read("x.aar").prefix(4)
        #expect(compression == "none" ? Array(head) == Array("AA01".utf8) : head.starts(with: Array("pbz".utf8)))
        let (summary, digests) = try read(dir.at("x.aar"))
        #expect(digests == expected)
        #expect(summary.files == 5 && summary.installSize == 5_530_010)
        #expect(summary.compression == compression)
    }

    @Test(arguments: AppleArchiveWriter.Compression.allCases)
    func archivesOurWriterMakesAreReadByAnIndependentReader(_ compression: AppleArchiveWriter.Compression) throws {
        let dir = try TemporaryDirectory("aar-write-\(compression)")
        defer { dir.remove() }
        let expected = try writeTree(dir)
        let manifest =
            #"{"assetPackID": "Tutorial", "downloadPolicy": {"onDemand": {}}, "platforms": ["iOS"], "fileSelectors": [{"directory": "."}]}"#
        let (m, _) = try PackManifest.load(Array(manifest.utf8), source: "m.json")
        let selection = try SourceSelection(manifest: m, sourceRoot: dir.at("src"))
        let written = try AppleArchiveWriter(compression: compression).write(
            selection, to: dir.at("a.aar"), overwrite: false)
        #expect(written.files == 5 && written.installSize == 5_530_010)
        // The same input gives the same bytes.
        _ = try AppleArchiveWriter(compression: compression).write(selection, to: dir.at("b.aar"), overwrite: false)
        #expect(try dir.read("a.aar") == dir.read("b.aar"))

        let listed = try aarTool(["list", dir.at("a.aar")])
        #expect(listed.succeeded, "\(String(decoding: listed.output, as: UTF8.self))")
        let entries = try String(decoding: listed.output, as: UTF8.self).split(separator: "\n").map {
            try JSONDecoder().decode(Listed.self, from: Data($0.utf8))
        }
        let files = Dictionary(uniqueKeysWithValues: entries.filter { $0.type == "F" }.map { ($0.path, $0.sha256) })
        let contents = Dictionary(uniqueKeysWithValues: expected.map { ("Contents/" + $0.key, $0.value) })
        #expect(files == contents.mapValues(\.hex))
        #expect(
            entries.first == Listed(type: "D", path: "", size: 0, sha256: SHA256.hash([]).hex), "a root folder first")
        #expect(
            Set(entries.filter { $0.type == "D" }.map(\.path)) == [
                "", "Contents", "Contents/Audio", "Contents/Audio/voice", "Contents/Levels", "Contents/Textures",
            ])
        let (read0, digests) = try read(dir.at("a.aar"))
        #expect(digests == contents)
        try read0.check(against: m, source: "a.aar")
        let (other, _) = try PackManifest.load(
            Array(
                manifest.replacingOccurrences(of: #"{"directory": "."}"#, with: #"{"file": "Levels/missing.dat"}"#).utf8
            ),
            source: "m.json")
        #expect(throws: BacklotError.self) { try read0.check(against: other, source: "a.aar") }

        // Extract makes the files, and nothing on failure.
        let summary = try AppleArchiveExtractor(
            try AppleArchiveReader(AppleArchiveFile(path: dir.at("a.aar")), name: "a")
        )
        .extract(to: dir.at("out"))
        #expect(summary.files == 5)
        for (path, digest) in expected { #expect(try SHA256.hash(fileAt: dir.at("out/Contents/" + path)) == digest) }
    }

    /// Bytes of the archive with `edit` applied, read back: must be refused with `phrase`.
    func expectRefused(
        _ bytes: [UInt8], _ phrase: String, in dir: TemporaryDirectory,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: dir.at("bad.aar")))
        do {
            _ = try read(dir.at("bad.aar"))
            Issue.record("the damaged archive was read (expected \(phrase))", sourceLocation: sourceLocation)
        } catch let e as BacklotError {
            #expect(e.code == .corruptArchive, "\(e)", sourceLocation: sourceLocation)
            #expect("\(e)".contains(phrase), "\(e)", sourceLocation: sourceLocation)
        }
        #expect(throws: BacklotError.self, sourceLocation: sourceLocation) {
            _ = try AppleArchiveExtractor(
                try AppleArchiveReader(AppleArchiveFile(path: dir.at("bad.aar")), name: "bad")
            )
            .extract(to: dir.at("never"))
        }
        #expect(!FileManager.default.fileExists(atPath: dir.at("never")), sourceLocation: sourceLocation)
    }

    /// Bytes of an LZFSE archive with a byte flipped: refused with `phrase`, or, when the byte
    /// carried nothing (LZFSE has no checksum, and the 8 bytes of padding before each of a block's
    /// payloads are never decoded), read back as exactly the undamaged files; never other bytes.
    func expectRefusedOrUnchanged(
        _ bytes: [UInt8], _ phrase: String, files expected: [String: SHA256Digest], in dir: TemporaryDirectory,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: dir.at("bad.aar")))
        guard let (_, digests) = try? read(dir.at("bad.aar")) else {
            return try expectRefused(bytes, phrase, in: dir, sourceLocation: sourceLocation)
        }
        #expect(digests == expected, "a damaged archive was read as other bytes", sourceLocation: sourceLocation)
    }

    /// An entry of uncompressed `AA01` with these fields (key, subtype, value) and blobs after them.
    static func entry(_ fields: [(String, [UInt8])], blobs: [UInt8] = []) -> [UInt8] {
        let body = fields.flatMap { Array($0.0.utf8) + $0.1 }
        return Array("AA01".utf8) + le16(6 + body.count) + body + blobs
    }
    static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
    static func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(v >> (8 * $0) & 0xFF) } }
    static func text(_ s: String) -> [UInt8] { le16(s.utf8.count) + Array(s.utf8) }

    /// A link whose target starts with "/" then a combining mark (one Character, so a
    /// `hasPrefix("/")` missed it) is absolute all the same, and refused; and blobs other than
    /// DAT (an extended attribute on a folder) count against the install-size limit, so a small
    /// archive cannot make a server decompress far more than it accepts.
    @Test func anAbsoluteLinkBehindACombiningMarkAndOversizedOtherBlobsAreRefused() throws {
        let dir = try TemporaryDirectory("aar-hostile")
        let root = Self.entry([("TYP1", Array("D".utf8)), ("PATP", Self.text(""))])
        let link = Self.entry([
            ("TYP1", Array("L".utf8)), ("PATP", Self.text("l")), ("LNKP", Self.text("/\u{301}/tmp/x")),
        ])
        try expectRefused(root + link, "a link that leaves the archive", in: dir)

        let attribute = [UInt8](repeating: 0, count: 4_096)
        let folder = Self.entry(
            [("TYP1", Array("D".utf8)), ("PATP", Self.text("")), ("XATB", Self.le32(attribute.count))], blobs: attribute
        )
        let file = Self.entry(
            [("TYP1", Array("F".utf8)), ("PATP", Self.text("a.txt")), ("DATB", Self.le32(100))],
            blobs: [UInt8](repeating: 65, count: 100))
        try Data(folder + file).write(to: URL(fileURLWithPath: dir.at("xattr.aar")))
        func readAll(limit: UInt64) throws -> AppleArchiveReader.Summary {
            try AppleArchiveReader(AppleArchiveFile(path: dir.at("xattr.aar")), name: "xattr").readAll(
                maximumInstallSize: limit
            ) { _ in nil }
        }
        let error = #expect(throws: BacklotError.self) { _ = try readAll(limit: 1_000) }
        #expect(error?.message.contains("the other blobs (extended attributes, ACLs) add up to more than 1000") == true)
        #expect(try readAll(limit: 4_196).installSize == 100, "within the limit, the attribute is read past")
    }

    @Test func damageAnywhereIsRefusedNamingTheBlockOrTheEntry() throws {
        let dir = try TemporaryDirectory("aar-damage")
        defer { dir.remove() }
        let files = try writeTree(dir)
        var g = SeededGenerator.fromEnvironment()
        print("AppleArchiveTests damage seed: \(g.seed) (BACKLOT_TEST_SEED replays it)")
        // zlib and LZFSE archives from the independent writer, the plain one from ours.
        for compression in ["zlib", "lzfse"] {
            #expect(
                try aarTool(["write", "--compression", compression, dir.at("src"), dir.at("\(compression).aar")])
                    .succeeded)
            let good = try dir.read("\(compression).aar")
            // A flipped byte inside each block's payload (past its two size fields).
            var bytes = good
            let at = 12 + 16 + Int(g.next() % 1000)
            bytes[at] ^= 0x5A
            // zlib's Adler-32 finds it in the block; LZFSE has no checksum, so the entry's SH2 does
            // (or the byte was padding, which no decoder reads).
            if compression == "zlib" {
                try expectRefused(bytes, "block 1 of", in: dir)
            } else {
                try expectRefusedOrUnchanged(bytes, "not a sound Apple Archive", files: files, in: dir)
            }
            // Cut short anywhere past the header.
            try expectRefused(
                Array(good.prefix(12 + Int(g.next() % UInt64(good.count - 12)))), "not a sound Apple Archive", in: dir)
            // A block that declares more raw bytes than the block size.
            bytes = good
            bytes[12 + 2] = 0xFF
            try expectRefused(bytes, "outside 1 … the block size", in: dir)
        }
        // A plain archive: a lying data size, a path out of the root, a second entry at one path,
        // a checksum that does not match, a FIFO.
        let plainHeader = { (kind: String, path: String, data: [UInt8], extra: [UInt8]) -> [UInt8] in
            var fields = Array("TYP1".utf8) + Array(kind.utf8) + Array("PATP".utf8)
            fields += withUnsafeBytes(of: UInt16(path.utf8.count).littleEndian) { Array($0) } + Array(path.utf8)
            fields += extra + Array("DATB".utf8) + withUnsafeBytes(of: UInt32(data.count).littleEndian) { Array($0) }
            return Array("AA01".utf8) + withUnsafeBytes(of: UInt16(6 + fields.count).littleEndian) { Array($0) }
                + fields + data
        }
        let ok = plainHeader("F", "a.txt", Array("hello".utf8), [])
        #expect(
            try {
                try Data(ok).write(to: URL(fileURLWithPath: dir.at("ok.aar")))
                return try read(dir.at("ok.aar")).0.files
            }() == 1)
        try expectRefused(Array(ok.dropLast(2)), "runs past the archive's end", in: dir)
        try expectRefused(plainHeader("F", "../escape", [1], []), "not a safe relative path", in: dir)
        try expectRefused(plainHeader("F", "/etc/passwd", [1], []), "not a safe relative path", in: dir)
        try expectRefused(ok + ok, "two entries with the path", in: dir)
        try expectRefused(ok + plainHeader("F", "a.txt/b", [1], []), "needs it to be a folder", in: dir)
        try expectRefused(plainHeader("F", "a.txt/b", [1], []) + ok, "needs it to be a folder", in: dir)
        let crc = Array("CKSF".utf8) + [0, 0, 0, 0]
        try expectRefused(plainHeader("F", "c.txt", Array("data".utf8), crc), "CRC-32", in: dir)
        let siz = Array("SIZ8".utf8) + withUnsafeBytes(of: UInt64(9).littleEndian) { Array($0) }
        try expectRefused(plainHeader("F", "d.txt", Array("data".utf8), siz), "SIZ says 9 bytes", in: dir)
        try expectRefused(plainHeader("P", "fifo", [], []), "a FIFO", in: dir)
        try expectRefused(Array("AA01".utf8) + [200, 0] + Array("TYP1F".utf8), "needs 194 bytes", in: dir)
    }

    @Test func theCodecsRefuseStreamsThatExpandPastTheirDeclaredSize() throws {
        let text = Array(String(repeating: "backlot ", count: 10_000).utf8)
        for (name, packed, decode) in [
            ("zlib", try Zlib.compress(text), { try Zlib.decompress($0, expectedSize: $1) }),
            ("lzma", try LZMA.compress(text), { try LZMA.decompress($0, expectedSize: $1) }),
            ("lz4", try LZ4Frames.compress(text), { try LZ4Frames.decompress($0, expectedSize: $1) }),
        ] as [(String, [UInt8], ([UInt8], Int) throws -> [UInt8])] {
            #expect(try decode(packed, text.count) == text, "\(name)")
            #expect(throws: CodecError.self, "\(name): smaller") { try decode(packed, text.count - 1) }
            #expect(throws: CodecError.self, "\(name): larger") { try decode(packed, text.count + 1) }
            #expect(throws: CodecError.self, "\(name): trailing bytes") { try decode(packed + [0], text.count) }
        }
    }
}
