import BacklotBasics
import Foundation
import Testing

/// `FileSystem.makeDirectories` (`mkdir -p`) errors are Backlot's: the folder that could not be
/// made, why, and what to do, never Foundation's text.
@Suite struct MakeDirectoriesTests {
    /// A new folder under the system's temporary folder, and the path of `name` inside it.
    struct Scratch {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("mkdirs-\(UUID().uuidString)").path
        init() throws { try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: false) }
        func at(_ name: String) -> String { root + "/" + name }
        func remove() { FileSystem.removeTree(root) }
    }

    @Test func makesEveryMissingFolderAndAcceptsWhatExists() throws {
        let dir = try Scratch()
        defer { dir.remove() }
        try FileSystem.makeDirectories(dir.at("a/b/c"))
        #expect(try FileSystem.status(dir.at("a/b/c"))?.kind == .directory)
        try FileSystem.makeDirectories(dir.at("a/b/c"))  // again: nothing to do
        try FileSystem.makeDirectories(dir.at("a//b/./d/"))  // doubled and trailing slashes, a dot
        #expect(try FileSystem.status(dir.at("a/b/d"))?.kind == .directory)
        // A link to a folder on the way is followed, as mkdir -p does.
        try FileManager.default.createSymbolicLink(atPath: dir.at("link"), withDestinationPath: dir.at("a"))
        try FileSystem.makeDirectories(dir.at("link/e"))
        #expect(try FileSystem.status(dir.at("a/e"))?.kind == .directory)
    }

    @Test func aFileInTheWayIsNamedInABacklotError() throws {
        let dir = try Scratch()
        defer { dir.remove() }
        try FileSystem.makeDirectories(dir.at("a"))
        #expect(FileManager.default.createFile(atPath: dir.at("a/file"), contents: Data("x".utf8)))
        do {
            try FileSystem.makeDirectories(dir.at("a/file/b"))
            Issue.record("a folder was made beneath a file")
        } catch let error as BacklotError {
            #expect(error.code == .io)
            #expect(error.context == dir.at("a/file/b") || error.context == dir.at("a/file"), "\(error)")
            #expect(error.message.contains("create directory"), "\(error.message)")
        }
    }
}
