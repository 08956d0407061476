import BacklotBasics
import BacklotCrypto
import BacklotTestSupport
import BacklotZstd
import Foundation
import Testing

@testable import BacklotFormat

/// Format version 2 front-codes its paths, so a small index can declare paths far larger than
/// itself. What a pack's paths hold once decoded, and how many files it has, are limited
/// (`docs/format.md` §10), checked before each path is built, and the writer refuses what the
/// readers would.
@Suite struct IndexAmplificationTests {
    func decode(_ pack: [UInt8]) throws -> PackIndex {
        let header = try PackHeader.decode(
            Array(pack.prefix(PackHeader.size)), fileSize: UInt64(pack.count), source: "crafted")
        return try PackIndex.decode(Array(pack[Int(header.indexOffset)...]), header: header, source: "crafted")
    }

    func refusal(_ pack: [UInt8]) -> BacklotError? {
        do {
            _ = try decode(pack)
            return nil
        } catch {
            return error as? BacklotError
        }
    }

    @Test func pathsThatDecodeToMoreThanTheLimitAreRefusedNamingIt() throws {
        // 16,800 paths of 4,010 bytes: 67.4 MB decoded, just over 64 MiB, from a 400 KB pack.
        let pack = try CraftedPack.manyPaths(count: 16_800, prefixLength: 4_000)
        #expect(pack.count < 500_000)
        let e = try #require(refusal(pack))
        #expect(e.code == .corruptArchive)
        #expect(e.message.contains("at most \(PackIndex.Limits.pathBytes) in all"), "\(e.message)")
        #expect(e.message.contains("file 16"), "names the record: \(e.message)")
        #expect(e.hint?.contains("several packs") == true)
        // The same shape under the limit is a valid pack: the limit is where docs/format.md says.
        let under = try decode(try CraftedPack.manyPaths(count: 16_000, prefixLength: 4_000))
        #expect(under.files.count == 16_000 && under.files.allSatisfy { $0.path.utf8.count == 4_010 })
    }

    @Test func moreFilesThanALimitAreRefusedBeforeAnyIsRead() throws {
        let limit = PackIndex.Limits.fileCount
        let over = try CraftedPack.manyPaths(count: limit + 1, prefixLength: 1)
        let e = try #require(refusal(over))
        #expect(e.message.contains("declares \(limit + 1) files; a pack may hold at most \(limit)"), "\(e.message)")
        // Exactly the limit is read.
        let at = try decode(try CraftedPack.manyPaths(count: limit, prefixLength: 1))
        #expect(at.files.count == limit && at.files.last?.path == "d" + String(format: "%010d", limit - 1))
    }

    @Test func aVersionOneIndexCountsItsPathsAgainstTheSameLimits() throws {
        // Version 1 holds its paths whole, so its index bounds them already; the count is the same rule.
        let files = (0..<3).map { CraftedPack.File(path: "f\($0)", bytes: []) }
        let pack = try CraftedPack(files: files)
        #expect(try decode(pack.bytes).files.count == 3)
        var bytes = pack.bytes
        // The file count is the four bytes after the (empty) chunk table.
        let index = Int(pack.header.indexOffset)
        let metaLength = Int(
            UInt32(littleEndian: bytes[index + 8..<index + 12].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }))
        let countAt = index + 12 + metaLength + 4
        #expect(bytes[countAt] == 3)
        withUnsafeBytes(of: UInt32(PackIndex.Limits.fileCount + 1).littleEndian) {
            bytes.replaceSubrange(countAt..<countAt + 4, with: $0)
        }
        let indexBytes = Array(bytes[index...])
        let header = PackHeader(
            formatVersion: 1, indexOffset: pack.header.indexOffset, indexLength: UInt64(indexBytes.count),
            indexDigest: SHA256.hash(indexBytes))
        let e = try #require(refusal(header.encoded + indexBytes))
        #expect(e.message.contains("a pack may hold at most \(PackIndex.Limits.fileCount)"), "\(e.message)")
    }

    @Test func theWriterRefusesASelectionNoReaderWouldAcceptBeforeReadingIt() throws {
        let dir = try TemporaryDirectory("writer-limits")
        defer { dir.remove() }
        for name in ["a.txt", "bb.txt", "ccc.txt"] { try dir.write("src/\(name)", Array(name.utf8)) }
        let (m, _) = try PackManifest.load(
            Array(
                #"{"assetPackID":"L","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"directory":"."}],"platforms":["linux"]}"#
                    .utf8), source: "M.json")
        let selection = try SourceSelection(manifest: m, sourceRoot: dir.at("src"))
        // The rule, at limits small enough to reach: 3 files, 18 path bytes.
        try PackWriter.checkLimits(selection, path: "out.pack", fileCount: 3, pathBytes: 18)
        func refusal(fileCount: Int, pathBytes: Int) -> String? {
            do {
                try PackWriter.checkLimits(selection, path: "out.pack", fileCount: fileCount, pathBytes: pathBytes)
                return nil
            } catch {
                return (error as? BacklotError).map { "\($0.code.name): \($0.message)" }
            }
        }
        #expect(
            refusal(fileCount: 2, pathBytes: 18)?.contains(
                "invalidSource: the manifest selects 3 files; a pack may hold at most 2") == true)
        #expect(
            refusal(fileCount: 3, pathBytes: 17)?.contains(
                "paths hold 18 bytes; a pack's paths may hold at most 17 in all") == true)
        // write() applies the format's limits before it opens anything: a selection within them is packaged.
        _ = try PackWriter().write(manifest: m, selection: selection, to: dir.at("out.pack"))
        #expect(try PackReader(path: dir.at("out.pack")).index.files.count == 3)
    }
}
