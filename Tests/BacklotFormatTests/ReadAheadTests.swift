import BacklotBasics
import BacklotCrypto
import BacklotTestSupport
import BacklotZstd
import Foundation
import Testing

@testable import BacklotFormat

/// The small files read, cut and hashed while the dictionary is trained (`ReadAhead`): what is
/// read ahead is what packing the file in its turn would find, nothing past the budget is held,
/// a file that changed is left for its turn (which refuses it), and a pack made with it is the
/// one made without.
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
        let ahead = ReadAhead(selection: files, budget: budget)
        let root = try DirectoryHandle(path: selection.sourceRoot)
        let chunker = Chunker()
        DispatchQueueRunner.run(jobs: 2) { ahead.run(root: root, chunker: chunker, until: { false }) }

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
        let ahead = ReadAhead(selection: selection.files)
        let root = try DirectoryHandle(path: selection.sourceRoot)
        ahead.run(root: root, chunker: Chunker(), until: { false })
        #expect(ahead.take(0) == nil, "a file that changed was read ahead")
        #expect(ahead.take(1)?.bytes == Array("world".utf8))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: SmallBatch.fileLimit + 1, alignment: 16)
        defer { buffer.deallocate() }
        #expect {
            try SmallBatch.pack(
                selection.files[0], root: root, buffer: buffer, chunker: Chunker(),
                compressor: ZstdCompressor(level: 3), alreadyStored: StoredChunks(expected: 0),
                ahead: ahead.take(0))
        } throws: { error in
            (error as? BacklotError)?.code == .invalidSource
                && "\(error)".contains("changed while it was being packaged")
        }
    }

    @Test func stoppingBetweenTwoFilesLeavesTheRestForTheirTurn() throws {
        let dir = try TemporaryDirectory("read-ahead-stop")
        defer { dir.remove() }
        for i in 0..<10 { try dir.write("src/f\(i).txt", "file \(i)") }
        let (_, selection) = try selection(dir)
        let ahead = ReadAhead(selection: selection.files)
        let root = try DirectoryHandle(path: selection.sourceRoot)
        var calls = 0
        ahead.run(
            root: root, chunker: Chunker(),
            until: {
                calls += 1
                return calls > 3
            })
        let taken = selection.files.indices.filter { ahead.take($0) != nil }
        #expect(taken == [0, 1, 2], "read ahead: \(taken)")
    }
}
