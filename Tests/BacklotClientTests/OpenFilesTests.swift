import BacklotBasics
import BacklotFormat
import BacklotTestSupport
import BacklotZstd
import Foundation
import Testing

@testable import BacklotClient

/// The files of a release being assembled, written chunk by chunk as an install does: each is
/// checked and made read-only when complete, and small files start flushes of the file system
/// ahead of the last one (which alone makes the release durable).
@Suite struct OpenFilesTests {
    /// `dir/src` packaged as pack `id` (`dir/ID.pack`), read back, with every chunk placed.
    static func pack(_ dir: TemporaryDirectory, id: String) throws -> (PackReader, ChunkPlacements) {
        try dir.write(
            "Manifest.json",
            #"{"assetPackID": ""# + id
                + #"", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "."}], "platforms": ["linux"]}"#
        )
        let (manifest, _) = try PackManifest.load(path: dir.at("Manifest.json"))
        let selection = try SourceSelection(manifest: manifest, sourceRoot: dir.at("src"))
        _ = try PackWriter().write(manifest: manifest, selection: selection, to: dir.at(id + ".pack"))
        let pack = try PackReader(path: dir.at(id + ".pack"))
        return (pack, ChunkPlacements(index: pack.index) { _ in true })
    }

    @Test func smallFilesStartFlushesAheadAndEveryFileIsCheckedAndReadOnly() throws {
        let dir = try TemporaryDirectory("open-files")
        defer { dir.remove() }
        var random = SeededGenerator(seed: 28)
        var sources: [String: [UInt8]] = [:]
        for i in 0..<30 {
            let bytes = random.bytes(3_000 + i)
            sources["f\(i).bin"] = bytes
            try dir.write("src/f\(i).bin", bytes)
        }
        let (pack, placements) = try Self.pack(dir, id: "Small")
        try FileManager.default.createDirectory(atPath: dir.at("out"), withIntermediateDirectories: false)
        // A flush ahead every 20,000 bytes, one at a time: about 90,000 bytes start one to four.
        let files = OpenFiles(
            folder: dir.at("out"), files: pack.index.files, placements: placements.perFile, chunks: pack.index.chunks,
            source: "Small.pack", flushAheadBytes: 20_000)
        let decompressor = ZstdDecompressor()
        for chunk in pack.index.chunks.indices {
            let bytes = try pack.readChunk(chunk, using: decompressor)
            for place in placements[chunk] { try files.account(place, writing: bytes) }
        }
        try files.syncAll(holding: dir.at("out"))
        files.closeAll()
        let started = files.flushesAhead.load(ordering: .relaxed)
        #expect((1...4).contains(started), "small files started \(started) flushes ahead")
        for (name, bytes) in sources {
            #expect(Array(try Data(contentsOf: URL(fileURLWithPath: dir.at("out/" + name)))) == bytes, "\(name)")
            let mode =
                try FileManager.default.attributesOfItem(atPath: dir.at("out/" + name))[.posixPermissions] as? Int
            #expect(mode == 0o444, "\(name) is read-only")
        }
        // With the default (32 MiB), these 90 KB start none.
        #expect(OpenFiles.defaultFlushAheadBytes == 32 << 20)
    }

    /// A folder of the release being assembled is replaced by a link (the app can write the
    /// container) before its file is made: the file is made beneath the release through no link,
    /// so the write fails and nothing lands where the link points.
    @Test func aFolderSwappedForALinkReceivesNothing() throws {
        let dir = try TemporaryDirectory("open-files-link")
        defer { dir.remove() }
        try dir.write("src/sub/a.bin", [UInt8](repeating: 7, count: 5_000))
        let (pack, placements) = try Self.pack(dir, id: "Linked")
        let release = try DirectoryHandle(ownFolder: dir.at("out"))
        try release.makeFolderBeneath("sub")
        // Swapped after the folder was made, before the file is.
        try FileSystem.makeDirectories(dir.at("outside"))
        #expect(rename(dir.at("out/sub"), dir.at("out/moved")) == 0)
        #expect(symlink(dir.at("outside"), dir.at("out/sub")) == 0)
        let files = OpenFiles(
            folder: dir.at("out"), beneath: release, files: pack.index.files, placements: placements.perFile,
            chunks: pack.index.chunks, source: "Linked.pack")
        defer { files.closeAll() }
        let decompressor = ZstdDecompressor()
        #expect(throws: BacklotError.self) {
            for chunk in pack.index.chunks.indices {
                let bytes = try pack.readChunk(chunk, using: decompressor)
                for place in placements[chunk] { try files.account(place, writing: bytes) }
            }
        }
        #expect(try FileSystem.entryNames(dir.at("outside")).isEmpty)
    }
}
