import BacklotBasics
import BacklotCommands
import BacklotCrypto
import BacklotTestSupport
import Foundation
import Testing

/// `package --format pack,aar` writes both from one selection; `verify`, `inspect` and `extract`
/// read the `.aar` as they read a pack, and refuse a damaged one naming where.
@Suite struct AppleArchiveCommandTests {
    func run(_ args: [String]) -> (status: Int32, out: String, err: String) {
        let io = CapturedIO()
        let status = BacklotCLI.main(args, io: io)
        return (status, io.standardOutput, io.standardError)
    }

    struct Inspected: Decodable {
        struct Entry: Decodable {
            let type: String
            let path: String
            let bytes: UInt64
        }
        let format: String
        let compression: String
        let installBytes: UInt64
        let fileCount: Int
        let entries: [Entry]
    }

    @Test func onePackagingRunWritesBothAndTheArchiveVerifiesInspectsAndExtracts() throws {
        let dir = try TemporaryDirectory("aar-commands")
        defer { dir.remove() }
        var g = SeededGenerator(seed: 8)
        let level = g.bytes(70_000)
        try dir.write("src/Levels/1.dat", level)
        try dir.write("src/readme.txt", "read me\n")
        let manifest = try dir.write(
            "m.json",
            #"{"assetPackID": "Tutorial", "downloadPolicy": {"onDemand": {}}, "platforms": ["iOS", "linux"], "sourceRoot": "src", "fileSelectors": [{"directory": "."}]}"#
        )
        let both = run([
            "package", manifest, "--format", "pack,aar", "-o", dir.at("out"), "--download-manifest",
            dir.at("download.json"), "--download-base-url", "https://cdn.example.com/packs",
        ])
        #expect(both.status == 0, "\(both.err)")
        let download = String(decoding: try dir.read("download.json"), as: UTF8.self)
        let archiveSize = try FileManager.default.attributesOfItem(atPath: dir.at("out/Tutorial.aar"))[.size] as? Int
        #expect(
            download.contains("https://cdn.example.com/packs/Tutorial") && download.contains("\(archiveSize ?? -1)"),
            "\(download)")
        #expect(FileManager.default.fileExists(atPath: dir.at("out/Tutorial.pack")))
        let aar = dir.at("out/Tutorial.aar")
        #expect(run(["verify", dir.at("out/Tutorial.pack")]).status == 0)
        let verified = run(["verify", aar])
        #expect(
            verified.status == 0 && verified.out.contains("Apple Archive (zlib, 1 block), 2 files"), "\(verified.out)")

        let inspected = run(["inspect", "--json", aar])
        let listing = try JSONDecoder().decode(Inspected.self, from: Data(inspected.out.utf8))
        #expect(listing.format == "aar" && listing.compression == "zlib" && listing.fileCount == 2)
        #expect(listing.installBytes == 70_008)
        #expect(
            listing.entries.filter { $0.type == "file" }.map(\.path) == [
                "Contents/Levels/1.dat", "Contents/readme.txt",
            ])
        #expect(run(["inspect", "--files", aar]).out.contains("Contents/Levels/1.dat"))

        let extracted = run(["extract", aar, "-o", dir.at("x")])
        #expect(extracted.status == 0, "\(extracted.err)")
        #expect(try dir.read("x/Contents/Levels/1.dat") == level)

        // LZMA, LZ4 and none, each read back; a bad --format or --compression is a usage error.
        for compression in ["lzma", "lz4", "none"] {
            let one = run([
                "package", manifest, "--format", "aar", "--compression", compression, "-o",
                dir.at("\(compression).aar"),
            ])
            #expect(one.status == 0, "\(one.err)")
            #expect(run(["verify", dir.at("\(compression).aar")]).status == 0)
        }
        #expect(run(["package", manifest, "--format", "zip", "-o", dir.at("z")]).status == 2)
        #expect(run(["package", manifest, "--format", "aar", "--compression", "lzfse", "-o", dir.at("z")]).status == 2)

        // A flipped byte in the zlib block: refused naming the block, nothing extracted.
        var bytes = try dir.read("out/Tutorial.aar")
        bytes[40] ^= 0x20
        try dir.write("bad.aar", bytes)
        let bad = run(["verify", dir.at("bad.aar")])
        #expect(bad.status == 1 && bad.err.contains("block 1 of 1 does not decode"), "\(bad.err)")
        #expect(run(["extract", dir.at("bad.aar"), "-o", dir.at("never")]).status == 1)
        #expect(!FileManager.default.fileExists(atPath: dir.at("never")))
    }
}
