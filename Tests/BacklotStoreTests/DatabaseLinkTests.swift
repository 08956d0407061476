import BacklotBasics
import BacklotStore
import Foundation
import Testing

/// A database often lives in a folder another program can write (a device container): a link
/// where the database or one of its companion files goes is refused, never followed.
@Suite struct DatabaseLinkTests {
    @Test(arguments: ["", "-wal", "-shm", "-journal"]) func aLinkWhereTheDatabaseGoesIsRefused(suffix: String) throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("dblink-\(UUID().uuidString)").path
        try FileSystem.makeDirectories(root)
        defer { FileSystem.removeTree(root) }
        let victim = root + "/victim"
        try Data("not a database".utf8).write(to: URL(fileURLWithPath: victim))
        #expect(chmod(victim, 0o640) == 0)
        #expect(symlink(victim, root + "/state.sqlite" + suffix) == 0)
        let error = #expect(throws: BacklotError.self) { try Database(path: root + "/state.sqlite", mode: 0o600) }
        #expect(error?.code == .untrusted, "\(String(describing: error))")
        #expect(FileManager.default.contents(atPath: victim) == Data("not a database".utf8))
        var st = stat()
        #expect(stat(victim, &st) == 0 && st.st_mode & 0o777 == 0o640, "the mode is not set through the link")

        // A link to nowhere: nothing is made where it points.
        unlink(root + "/state.sqlite" + suffix)
        #expect(symlink(root + "/made-elsewhere", root + "/state.sqlite" + suffix) == 0)
        #expect(throws: BacklotError.self) { try Database(path: root + "/state.sqlite") }
        #expect(!FileManager.default.fileExists(atPath: root + "/made-elsewhere"))
    }

    /// A FIFO where the database goes is refused without waiting on it.
    @Test(.timeLimit(.minutes(1))) func aFIFOWhereTheDatabaseGoesIsRefused() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("dbfifo-\(UUID().uuidString)").path
        try FileSystem.makeDirectories(root)
        defer { FileSystem.removeTree(root) }
        #expect(mkfifo(root + "/state.sqlite", 0o600) == 0)
        let error = #expect(throws: BacklotError.self) { try Database(path: root + "/state.sqlite") }
        #expect(error?.code == .untrusted)
    }
}
