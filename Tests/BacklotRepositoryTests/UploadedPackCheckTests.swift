import BacklotBasics
import BacklotFormat
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotRepository

/// The check of an uploaded pack on several threads (runs of neighbouring files handed out in
/// order, each thread with a reader of its own) finds what one thread finds, and of two damaged
/// files always names the first in index order.
@Suite struct UploadedPackCheckTests {
    /// A pack of 40 files: most of one chunk, every fifth of several.
    static func pack(_ dir: TemporaryDirectory) throws -> String {
        var g = SeededGenerator(seed: 31)
        for i in 0..<40 {
            _ = try dir.write(String(format: "src/f%02d.bin", i), g.bytes(i % 5 == 0 ? 90_000 : 3_000 + i * 100))
        }
        return try SamplePack.build(in: dir, dictionary: false)
    }

    static func check(_ path: String, threads: Int) throws -> UploadedPackCheck.Outcome {
        let reader = try FileArchiveReader(path: path)
        defer { reader.close() }
        return try UploadedPackCheck.run(
            reader: reader, open: { try FileArchiveReader(path: path) }, threads: threads,
            maximumInstallSize: 1 << 30, isCancelled: { false }, runsOf: (64 << 10, 3))
    }

    @Test func severalThreadsFindWhatOneFinds() throws {
        let dir = try TemporaryDirectory("check-threads")
        defer { dir.remove() }
        let path = try Self.pack(dir)
        let one = try Self.check(path, threads: 1)
        #expect(UploadedPackCheck.fileRuns(one.index, limit: (64 << 10, 3)).count > 4)
        for threads in [2, 4] {
            let many = try Self.check(path, threads: threads)
            #expect(many.installSize == one.installSize && many.hashedFileBytes == one.hashedFileBytes)
            #expect(many.index == one.index)
        }
    }

    @Test func ofTwoDamagedFilesTheFirstInIndexOrderIsNamedWhateverTheThreads() throws {
        let dir = try TemporaryDirectory("check-first")
        defer { dir.remove() }
        let path = try Self.pack(dir)
        var bytes = try dir.read("out.pack")
        let index = try PackReader(path: path).index
        // One byte in the middle of the first chunk of files 12 and 33.
        for i in [12, 33] {
            let chunk = index.chunks[index.files[i].chunks[0]]
            bytes[Int(chunk.offset) + Int(chunk.compressedSize) / 2] ^= 0x5A
        }
        let damaged = try dir.write("damaged.pack", bytes)
        for threads in [1, 2, 4] {
            for _ in 0..<5 {
                let error = try #require(throws: BacklotError.self) { try Self.check(damaged, threads: threads) }
                #expect(error.context?.contains(index.files[12].path) == true, "\(threads) threads: \(error)")
            }
        }
    }
}
