import BacklotBasics
import Foundation
import Testing

/// `FileSystem.entries` lists a directory with what `lstat` says of each entry, looked at relative
/// to the directory it opened: links are reported as links, never followed, names are bytes.
@Suite struct DirectoryEntriesTests {
    @Test func eachEntryComesWithItsOwnStatusLinksNotFollowed() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("entries-\(UUID().uuidString)").path
        try FileSystem.makeDirectories(root + "/folder/inner")
        defer { FileSystem.removeTree(root) }
        #expect(FileManager.default.createFile(atPath: root + "/folder/file", contents: Data(repeating: 7, count: 300)))
        try FileManager.default.createSymbolicLink(
            atPath: root + "/folder/link", withDestinationPath: root + "/folder/file")
        try FileManager.default.createSymbolicLink(
            atPath: root + "/folder/dangling", withDestinationPath: root + "/none")
        let odd: [UInt8] = [0x6F, 0xFF, 0x64]  // not UTF-8: listed as its bytes
        let oddPath = Array((root + "/folder/").utf8) + odd + [0]
        let fd = oddPath.withUnsafeBufferPointer {
            $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644) }
        }
        #expect(fd >= 0)
        close(fd)

        let entries = try FileSystem.entries(root + "/folder")
        var kinds: [[UInt8]: FileSystem.Kind] = [:]
        for entry in entries { kinds[entry.name] = try #require(entry.status).kind }
        #expect(
            kinds == [
                Array("file".utf8): .regular, Array("inner".utf8): .directory, Array("link".utf8): .symlink,
                Array("dangling".utf8): .symlink, odd: .regular,
            ])
        #expect(entries.first { $0.name == Array("file".utf8) }?.status?.size == 300)
        // The same names as entryNames, which lists without looking at them.
        #expect(Set(try FileSystem.entryNames(root + "/folder")) == Set(entries.map(\.name)))
        // A link to a folder given as the folder is followed, as opendir does.
        try FileManager.default.createSymbolicLink(atPath: root + "/alias", withDestinationPath: root + "/folder")
        #expect(Set(try FileSystem.entries(root + "/alias").map(\.name)) == Set(entries.map(\.name)))
    }

    /// A folder a walk found (its `lstat`) is listed only if the folder opened is still that one:
    /// one swapped for another folder, or for a link to one, is refused, not listed.
    @Test func aFolderReplacedSinceItWasFoundIsRefused() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("entries-\(UUID().uuidString)").path
        try FileSystem.makeDirectories(root + "/found")
        try FileSystem.makeDirectories(root + "/other")
        defer { FileSystem.removeTree(root) }
        #expect(FileManager.default.createFile(atPath: root + "/other/secret", contents: Data()))
        let found = try #require(try FileSystem.linkStatus(root + "/found"))
        #expect(try FileSystem.entries(root + "/found", expected: found).isEmpty)  // the control
        try FileSystem.rename(root + "/found", to: root + "/moved")
        try FileSystem.rename(root + "/other", to: root + "/found")
        let swapped = try #require(throws: BacklotError.self) {
            try FileSystem.entries(root + "/found", expected: found)
        }
        #expect(swapped.code == .io && swapped.context == root + "/found")
        FileSystem.removeTree(root + "/found")
        try FileManager.default.createSymbolicLink(
            atPath: root + "/found", withDestinationPath: root + "/moved/../found-target")
        try FileSystem.makeDirectories(root + "/found-target")
        #expect(throws: BacklotError.self) { try FileSystem.entries(root + "/found", expected: found) }
    }

    @Test func aMissingOrNonDirectoryPathIsAnIOErrorNamingIt() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("entries-\(UUID().uuidString)").path
        try FileSystem.makeDirectories(root)
        defer { FileSystem.removeTree(root) }
        #expect(FileManager.default.createFile(atPath: root + "/plain", contents: Data()))
        for path in [root + "/missing", root + "/plain"] {
            let error = try #require(throws: BacklotError.self) { try FileSystem.entries(path) }
            #expect(error.code == .io)
            #expect(error.context == path)
        }
    }
}
