import BacklotBasics
import BacklotCrypto
import BacklotTestSupport
import Dispatch
import Foundation
import Testing

@testable import BacklotFormat

#if canImport(Glibc)
import Glibc
#endif

/// The pack builder's two helper threads: the writes of the pack file, in order, and the large
/// files' SHA-256s, from chunks that cross hand-overs and files.
struct PackFileWritesTests {
    /// Both ways: straight to the device (the test folder's file system must take such writes:
    /// ext4, xfs, btrfs, and tmpfs since Linux 6.6 do), and through the page cache.
    @Test(arguments: [true, false]) func piecesAreWrittenInTheOrderTheyWereHandedOver(bypassing: Bool) throws {
        let dir = try TemporaryDirectory("pack-writes")
        defer { dir.remove() }
        let path = dir.at("out")
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        try #require(fd >= 0)
        let descriptor = FileDescriptor(rawValue: fd, path: path)
        defer { descriptor.close() }
        var g = SeededGenerator(seed: 4117)
        print("piecesAreWrittenInTheOrderTheyWereHandedOver seed 4117")
        var expected: [UInt8] = []
        let writes = PackFileWrites(descriptor: descriptor, bypassingPageCache: bypassing)
        defer { writes.stop() }
        let fileSystem = try Self.fileSystemType(dir.path)
        #expect(writes.bypassesPageCache == bypassing, "the test folder is on \(fileSystem)")
        // More than the thread's queue and its writes hold at once, in pieces of many sizes.
        for _ in 0..<24 {
            var pieces: [[UInt8]] = []
            for _ in 0..<Int.random(in: 1...40, using: &g) {
                let piece = g.bytes(Int.random(in: 0...(300 << 10), using: &g))
                expected += piece
                pieces.append(piece)
            }
            try writes.write(pieces)
        }
        try writes.finish()
        #expect(try FileDescriptor.readWholeFile(path, atMost: 1 << 30, what: "the file") == expected)
    }

    /// A write the disk refuses (`/dev/full`: ENOSPC) fails the next hand-over or the finish,
    /// naming the file, and nothing after it is written.
    @Test func aFailedWriteIsThrownByTheNextCall() throws {
        let fd = open("/dev/full", O_WRONLY | O_CLOEXEC)
        try #require(fd >= 0, "/dev/full cannot be opened: the test needs it")
        let descriptor = FileDescriptor(rawValue: fd, path: "/dev/full")
        defer { descriptor.close() }
        let writes = PackFileWrites(descriptor: descriptor)
        defer { writes.stop() }
        let piece = [UInt8](repeating: 1, count: PackFileWrites.writeSize)
        var thrown: (any Error)? = nil
        do {
            for _ in 0..<(PackFileWrites.queuedLimit + 4) { try writes.write([piece]) }
            try writes.finish()
        } catch {
            thrown = error
        }
        let error = try #require(thrown as? BacklotError)
        #expect(error.code == .io && "\(error)".contains("/dev/full"), "\(error)")
        #expect(throws: BacklotError.self) { try writes.finish() }
    }

    /// The type of the file system holding `path`, as `stat -f` names it (`ext2/ext3`, `tmpfs`).
    static func fileSystemType(_ path: String) throws -> String {
        let stat = Process()
        stat.executableURL = URL(fileURLWithPath: "/usr/bin/stat")
        stat.arguments = ["-f", "-c", "%T", path]
        let pipe = Pipe()
        stat.standardOutput = pipe
        try stat.run()
        let out = pipe.fileHandleForReading.readDataToEndOfFile()
        stat.waitUntilExit()
        try #require(stat.terminationStatus == 0, "stat -f \(path) failed")
        return String(decoding: out, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func largeFileDigestsFollowTheirChunksAcrossHandOvers() throws {
        var g = SeededGenerator(seed: 4118)
        print("largeFileDigestsFollowTheirChunksAcrossHandOvers seed 4118")
        // Files 3, 5 and 9, each cut into chunks handed over in batches that end inside a file.
        var chunks: [(file: Int, bytes: [UInt8])] = []
        var whole: [Int: [UInt8]] = [:]
        for file in [3, 5, 9] {
            for _ in 0..<Int.random(in: 1...12, using: &g) {
                let bytes = g.bytes(Int.random(in: 1...70_000, using: &g))
                chunks.append((file, bytes))
                whole[file, default: []] += bytes
            }
        }
        let digests = LargeFileDigests()
        defer { digests.stop() }
        let done = DispatchGroup()
        var start = 0
        while start < chunks.count {
            let end = min(chunks.count, start + Int.random(in: 1...5, using: &g))
            digests.hash(Array(chunks[start..<end]), countedBy: done)
            start = end
        }
        done.wait()
        let found = digests.finish()
        #expect(found.count == 3)
        for (file, bytes) in whole { #expect(found[file] == SHA256.hash(bytes), "file \(file)") }
    }
}
