import BacklotBasics
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotFormat

/// The flush before a tree is made visible (``TreeFlush``): a tree of few files is flushed file by
/// file and folder by folder, never through a link; a tree of many with one flush of its file system.
@Suite struct TreeFlushTests {
    @Test func aFewFilesAreFlushedWithTheFoldersOnTheirWay() throws {
        let dir = try TemporaryDirectory("flush")
        defer { dir.remove() }
        let files = ["a.bin", "levels/1/b.dat", "levels/1/c.dat", "levels/2/d.dat", "x y/é.txt"]
        for (i, file) in files.enumerated() { try dir.write("tree/" + file, [UInt8](repeating: UInt8(i), count: 4096)) }
        try TreeFlush.flush(tree: dir.at("tree"), files: files)
        for (i, file) in files.enumerated() {
            #expect(
                FileManager.default.contents(atPath: dir.at("tree/" + file)) == Data(repeating: UInt8(i), count: 4096))
        }
    }

    @Test func aLinkInPlaceOfAFileIsNeverFollowed() throws {
        let dir = try TemporaryDirectory("flush")
        defer { dir.remove() }
        try dir.write("outside", [1, 2, 3])
        try dir.write("tree/a.bin", [4])
        try FileManager.default.createSymbolicLink(atPath: dir.at("tree/b.bin"), withDestinationPath: dir.at("outside"))
        #expect {
            try TreeFlush.flush(tree: dir.at("tree"), files: ["a.bin", "b.bin"])
        } throws: { ($0 as? BacklotError)?.code == .io && ($0 as? BacklotError)?.context == dir.at("tree/b.bin") }
    }

    @Test func aMissingFileIsNamed() throws {
        let dir = try TemporaryDirectory("flush")
        defer { dir.remove() }
        try dir.write("tree/a.bin", [4])
        #expect {
            try TreeFlush.flush(tree: dir.at("tree"), files: ["a.bin", "gone/b.bin"])
        } throws: { ($0 as? BacklotError)?.context == dir.at("tree/gone/b.bin") }
    }

    @Test func manyFilesAreFlushedWithTheirFileSystem() throws {
        let dir = try TemporaryDirectory("flush")
        defer { dir.remove() }
        let files = (0...TreeFlush.fewFiles).map { "f\($0)" }
        for file in files { try dir.write("tree/" + file, [7]) }
        // Past the bound, the file list is not read one by one: a name that is not there changes nothing.
        try TreeFlush.flush(tree: dir.at("tree"), files: files + ["not-there"])
        #expect(throws: BacklotError.self) {
            try TreeFlush.flush(tree: dir.at("no-tree"), files: files)
        }
    }
}
