import BacklotBasics
import BacklotCrypto
import BacklotTestSupport
import BacklotZstd
import Foundation
import Testing

@testable import BacklotFormat

/// The small files read, cut and hashed while the dictionary is trained (`ReadAhead`): what is
/// read ahead is what packing the file in its turn would find, and packs to the same frames;
/// nothing past the budget is held; a file that changed is left for its turn, which refuses it.
@Suite struct ReadAheadTests {
    func selection(_ dir: TemporaryDirectory) throws -> (PackManifest, SourceSelection) {
        let (m, _) = try PackManifest.load(Array(SamplePack.manifest().utf8), source: "m")
        return (m, try SourceSelection(manifest: m, sourceRoot: dir.at("src")))
    }

    @Test func whatIsReadAheadIsWhatTheFileHoldsUpToTheBudget() throws {
        let dir = try TemporaryDirectory("read-ahead")
        defer { dir.remove() }
        var g = SeededGenerator.fromEnvironment()
        print("whatIsReadAheadIsWhatTheFileHoldsUpToTheBudget seed: \(g.seed)")
        // Small files, one of several chunks, one empty.
        for i in 0..<40 { try dir.write("src/f\(String(format: "%02d", i)).txt", g.text(100 + Int(g.next() % 3_000))) }
        try dir.write("src/f05.txt", g.bytes(300_000))
        try dir.write("src/f06.txt", [])
        let (_, selection) = try selection(dir)
        let files = selection.files
        let budget = files.prefix(30).reduce(UInt64(0)) { $0 + $1.size }
        let chunker = Chunker(averageSize: 16 << 10)
        let ahead = ReadAhead(selection: files, chunker: chunker, budget: budget)
        let root = try DirectoryHandle(path: selection.sourceRoot)
        DispatchQueueRunner.run(jobs: 2) { ahead.run(root: root, until: { false }) }
        // Packed with a dictionary, each file read ahead gives the frames it gives in its turn.
        let samples = (0..<400).map { _ in g.text(1_000) }
        let dictionary = try #require(ZstdDictionary.train(samples: samples, capacity: 8 << 10))
        let compressor = ZstdCompressor(level: 3, dictionary: dictionary)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: SmallBatch.fileLimit + 1, alignment: 16)
        defer { buffer.deallocate() }

        var read = 0
        for (i, file) in files.enumerated() {
            guard let taken = ahead.take(i) else {
                #expect(i >= 30, "\(file.sourcePath) was not read ahead")
                continue
            }
            read += 1
            #expect(i < 30, "\(file.sourcePath) was read past the budget")
            let bytes = try dir.read("src/" + file.sourcePath)
            #expect(taken.bytes == bytes, "\(file.sourcePath): other bytes")
            #expect(taken.digest == SHA256.hash(bytes), "\(file.sourcePath): another digest")
            let expected = bytes.withUnsafeBytes { SmallBatch.cut($0, chunker: chunker) }
            #expect(
                taken.chunks.map(\.id) == expected.chunks.map(\.id)
                    && taken.chunks.map(\.length) == expected.chunks.map(\.length),
                "\(file.sourcePath): other chunks")
            let early = try SmallBatch.pack(
                file, root: root, buffer: buffer, chunker: chunker, compressor: compressor,
                alreadyStored: StoredChunks(expected: 0), ahead: taken)
            let inTurn = try SmallBatch.pack(
                file, root: root, buffer: buffer, chunker: chunker, compressor: compressor,
                alreadyStored: StoredChunks(expected: 0))
            #expect(
                early.digest == inTurn.digest && early.pieces.map(\.id) == inTurn.pieces.map(\.id)
                    && early.pieces.map(\.compressed) == inTurn.pieces.map(\.compressed),
                "\(file.sourcePath): packed otherwise when read ahead")
            #expect(ahead.take(i) == nil, "\(file.sourcePath) was taken twice")
        }
        #expect(read == 30, "\(read) files read ahead, 30 expected (those within the budget)")
    }

    @Test func aFileThatChangedIsLeftForItsTurnWhichRefusesIt() throws {
        let dir = try TemporaryDirectory("read-ahead-changed")
        defer { dir.remove() }
        try dir.write("src/a.txt", "hello")
        try dir.write("src/b.txt", "world")
        let (_, selection) = try selection(dir)
        try dir.write("src/a.txt", "hello, and more")
        let ahead = ReadAhead(selection: selection.files, chunker: Chunker())
        let root = try DirectoryHandle(path: selection.sourceRoot)
        ahead.run(root: root, until: { false })
        let changed = ahead.take(0)
        #expect(changed == nil, "a file that changed was read ahead")
        #expect(ahead.take(1)?.bytes == Array("world".utf8))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: SmallBatch.fileLimit + 1, alignment: 16)
        defer { buffer.deallocate() }
        expectRefusedAsChanged {
            _ = try SmallBatch.pack(
                selection.files[0], root: root, buffer: buffer, chunker: Chunker(),
                compressor: ZstdCompressor(level: 3), alreadyStored: StoredChunks(expected: 0), ahead: changed)
        }
    }

    /// With a dictionary trained and two threads, a file that changed since it was selected is
    /// refused whether or not it was read ahead, and no pack is left.
    @Test func aChangedFileAmongManySmallFilesIsRefused() throws {
        let dir = try TemporaryDirectory("read-ahead-pack-changed")
        defer { dir.remove() }
        var g = SeededGenerator.fromEnvironment()
        print("aChangedFileAmongManySmallFilesIsRefused seed: \(g.seed)")
        // First in order and too large to be a sample: read ahead, if anything is.
        try dir.write("src/a.bin", g.text(20_000))
        for i in 0..<1_100 { try dir.write("src/t/\(i / 100)/f\(i).txt", g.text(300 + Int(g.next() % 700))) }
        let (m, selection) = try selection(dir)
        try dir.write("src/a.bin", g.text(20_001))
        expectPackagingRefusedAsChanged(m, selection, in: dir)
    }

    @Test func stoppingBetweenTwoFilesLeavesTheRestForTheirTurn() throws {
        let dir = try TemporaryDirectory("read-ahead-stop")
        defer { dir.remove() }
        for i in 0..<10 { try dir.write("src/f\(i).txt", "file \(i)") }
        let (_, selection) = try selection(dir)
        let ahead = ReadAhead(selection: selection.files, chunker: Chunker())
        let root = try DirectoryHandle(path: selection.sourceRoot)
        var calls = 0
        ahead.run(
            root: root,
            until: {
                calls += 1
                return calls > 3
            })
        let taken = selection.files.indices.filter { ahead.take($0) != nil }
        #expect(taken == [0, 1, 2], "read ahead: \(taken)")
    }
}
