import BacklotBasics
import Foundation
import Testing

/// What is made, written, read and removed through a ``DirectoryHandle`` lands in the folder that
/// was opened and never goes through a symbolic link, however the folder is changed meanwhile.
@Suite struct DirectoryHandleWritingTests {
    let root: String

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("dirwrite-\(UUID().uuidString)").path
        try FileSystem.makeDirectories(root + "/elsewhere")
    }

    func contents(_ path: String) -> [String] {
        ((try? FileSystem.entryNames(path)) ?? []).map { String(decoding: $0, as: UTF8.self) }.sorted()
    }

    /// The folder opened is moved and a link to another folder put in its place: what is made
    /// afterwards lands in the moved folder, the link's target stays untouched.
    @Test func whatIsMadeLandsInTheFolderOpenedWhereverItWasMoved() throws {
        defer { FileSystem.removeTree(root) }
        let calls = try DirectoryHandle(ownFolder: root + "/calls")
        #expect(rename(root + "/calls", root + "/moved") == 0)
        #expect(symlink(root + "/elsewhere", root + "/calls") == 0)

        let call = try calls.makeFolder("one", mode: 0o700)
        let written = try call.createFile("call.json", contents: Array("{}".utf8), mode: 0o600)
        #expect(written == root + "/calls/one/call.json")  // the path named for another process
        try calls.createFile("manifest.json", contents: [1, 2, 3], mode: 0o444)
        #expect(contents(root + "/moved") == ["manifest.json", "one"])
        #expect(contents(root + "/moved/one") == ["call.json"])
        #expect(contents(root + "/elsewhere").isEmpty)
        #expect(try call.readRegularFile("call.json", atMost: 100, what: "the call") == Array("{}".utf8))

        var st = stat()
        #expect(lstat(root + "/moved/manifest.json", &st) == 0)
        #expect(st.st_mode & 0o777 == 0o444)
        #expect(lstat(root + "/moved/one", &st) == 0)
        #expect(st.st_mode & 0o777 == 0o700)

        calls.removeTree("one")
        calls.removeTree("manifest.json")
        #expect(contents(root + "/moved").isEmpty)
    }

    /// Renames go from one opened folder to another (the hand-over of a finished download): into
    /// the folder opened even once it is swapped for a link, never over what is there, and a link
    /// being moved is moved as a link, not followed.
    @Test func aMoveGoesBetweenTheFoldersOpenedAndReplacesNothing() throws {
        defer { FileSystem.removeTree(root) }
        let downloads = try DirectoryHandle(ownFolder: root + "/downloads")
        let handover = try downloads.makeFolder("handover", mode: 0o755)
        try downloads.createFile("a.part", contents: [1], mode: 0o600)
        #expect(rename(root + "/downloads/handover", root + "/downloads/moved") == 0)
        #expect(symlink(root + "/elsewhere", root + "/downloads/handover") == 0)
        #expect(!handover.contains("a.file"))
        try downloads.move("a.part", to: handover, as: "a.file")
        #expect(handover.contains("a.file"))
        #expect(contents(root + "/downloads/moved") == ["a.file"])
        #expect(contents(root + "/elsewhere").isEmpty)

        // Nothing is replaced: not a file, not a link.
        try downloads.createFile("b.part", contents: [2], mode: 0o600)
        #expect(throws: BacklotError.self) { try downloads.move("b.part", to: handover, as: "a.file") }
        #expect(symlink(root + "/elsewhere/target", root + "/downloads/moved/link.file") == 0)
        #expect(throws: BacklotError.self) { try downloads.move("b.part", to: handover, as: "link.file") }
        #expect(throws: BacklotError.self) { try handover.moveIn(from: root + "/downloads/b.part", as: "a.file") }
        #expect(!FileManager.default.fileExists(atPath: root + "/elsewhere/target"))
        #expect(FileManager.default.contents(atPath: root + "/downloads/moved/a.file") == Data([1]))

        // A file given by path is moved into the folder opened.
        try handover.moveIn(from: root + "/downloads/b.part", as: "b.file")
        #expect(contents(root + "/downloads/moved") == ["a.file", "b.file", "link.file"])
        try handover.removeFile(Array("b.file".utf8))
        try handover.removeFile(Array("link.file".utf8))
        try handover.removeFile(Array("gone".utf8))  // missing: not an error
        #expect(contents(root + "/downloads/moved") == ["a.file"])
    }

    /// Paths beneath a folder (a release being assembled) are made, opened, linked and changed
    /// through no link: a folder inside it swapped for a link refuses them all, and what the link
    /// points at is left as it was.
    @Test func whatIsMadeBeneathNeverGoesThroughALink() throws {
        defer { FileSystem.removeTree(root) }
        let release = try DirectoryHandle(ownFolder: root + "/release")
        try release.makeFolderBeneath("a")
        try release.makeFolderBeneath("a")  // there already: fine
        try release.makeFolderBeneath("a/b")
        let fd = release.openBeneath("a/b/f", flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        #expect(fd >= 0)
        close(fd)
        try release.setModeBeneath("a/b/f", 0o444)
        #expect(release.linkStatusBeneath("a/b/f")?.mode == 0o444)
        try release.linkBeneath(from: root + "/release/a/b/f", as: "a/g")
        #expect(release.linkStatusBeneath("a/g")?.linkCount == 2)
        try release.removeFileBeneath("a/g")
        #expect(release.linkStatusBeneath("a/g") == nil)

        // a/b becomes a link to a folder elsewhere holding a read-only file of the same name.
        #expect(FileManager.default.createFile(atPath: root + "/elsewhere/f", contents: Data("x".utf8)))
        #expect(chmod(root + "/elsewhere/f", 0o600) == 0)
        #expect(rename(root + "/release/a/b", root + "/release/a/moved") == 0)
        #expect(symlink(root + "/elsewhere", root + "/release/a/b") == 0)
        #expect(release.openBeneath("a/b/new", flags: O_WRONLY | O_CREAT, mode: 0o644) < 0)
        #expect(release.openBeneath("a/b/f", flags: O_RDWR) < 0)
        #expect(release.openBeneath("../elsewhere/f", flags: O_RDONLY) < 0)
        #expect(throws: BacklotError.self) { try release.makeFolderBeneath("a/b/c") }
        #expect(throws: BacklotError.self) { try release.setModeBeneath("a/b/f", 0o777) }
        #expect(throws: BacklotError.self) { try release.linkBeneath(from: root + "/release/a/moved/f", as: "a/b/h") }
        #expect(throws: BacklotError.self) { try release.removeFileBeneath("a/b/f") }
        #expect(release.linkStatusBeneath("a/b/f") == nil)
        #expect(contents(root + "/elsewhere") == ["f"])
        var st = stat()
        #expect(lstat(root + "/elsewhere/f", &st) == 0 && st.st_mode & 0o777 == 0o600)
    }

    /// A link or a file where the folder is expected is refused, not followed; a missing one is made.
    @Test func anOwnFolderIsNeverALink() throws {
        defer { FileSystem.removeTree(root) }
        #expect(symlink(root + "/elsewhere", root + "/link") == 0)
        #expect(FileManager.default.createFile(atPath: root + "/file", contents: Data()))
        for name in ["link", "file"] {
            let error = #expect(throws: BacklotError.self) { try DirectoryHandle(ownFolder: root + "/" + name) }
            #expect(error?.code == .untrusted, "\(name)")
        }
        _ = try DirectoryHandle(ownFolder: root + "/made/deeper")
        #expect(contents(root + "/made") == ["deeper"])
    }

    /// A new file is never opened where something already is: a link (to a file or nowhere), a
    /// file or a FIFO. Nothing is written through it. A name that is not one plain name is refused.
    @Test func aNewFileIsNeverWrittenThroughWhatIsAlreadyThere() throws {
        defer { FileSystem.removeTree(root) }
        let folder = try DirectoryHandle(ownFolder: root + "/f")
        #expect(FileManager.default.createFile(atPath: root + "/elsewhere/target", contents: Data("old".utf8)))
        #expect(symlink(root + "/elsewhere/target", root + "/f/link") == 0)
        #expect(symlink(root + "/elsewhere/new", root + "/f/dangling") == 0)
        #expect(FileManager.default.createFile(atPath: root + "/f/file", contents: Data("mine".utf8)))
        #expect(mkfifo(root + "/f/fifo", 0o600) == 0)
        for name in ["link", "dangling", "file", "fifo"] {
            #expect(throws: BacklotError.self, "\(name)") {
                try folder.createFile(name, contents: Array("new".utf8), mode: 0o644)
            }
        }
        #expect(FileManager.default.contents(atPath: root + "/elsewhere/target") == Data("old".utf8))
        #expect(!FileManager.default.fileExists(atPath: root + "/elsewhere/new"))
        #expect(FileManager.default.contents(atPath: root + "/f/file") == Data("mine".utf8))
        for name in ["", ".", "..", "a/b", "../x"] {
            let error = #expect(throws: BacklotError.self, "\(name)") {
                try folder.createFile(name, contents: [], mode: 0o644)
            }
            #expect(error?.code == .invalidInput)
            #expect(throws: BacklotError.self, "\(name)") { try folder.makeFolder(name, mode: 0o700) }
        }
        // A folder is made only where nothing is.
        #expect(throws: BacklotError.self) { try folder.makeFolder("link", mode: 0o700) }
    }

    /// Reading refuses a link, a FIFO (without waiting on it) and a file over the limit.
    @Test(.timeLimit(.minutes(1))) func readingTakesOnlyARegularFileWithinItsLimit() throws {
        defer { FileSystem.removeTree(root) }
        let folder = try DirectoryHandle(ownFolder: root + "/r")
        #expect(FileManager.default.createFile(atPath: root + "/elsewhere/secret", contents: Data("s".utf8)))
        #expect(symlink(root + "/elsewhere/secret", root + "/r/link") == 0)
        #expect(mkfifo(root + "/r/fifo", 0o600) == 0)
        try folder.createFile("big", contents: [UInt8](repeating: 1, count: 2000), mode: 0o600)
        for name in ["link", "fifo"] {
            let error = #expect(throws: BacklotError.self, "\(name)") {
                try folder.readRegularFile(name, atMost: 100, what: "the answer")
            }
            #expect(error?.code == .invalidSource, "\(name)")
        }
        let error = #expect(throws: BacklotError.self) {
            try folder.readRegularFile("big", atMost: 1999, what: "the answer", code: .checkFailed)
        }
        #expect(error?.code == .checkFailed)
        #expect(try folder.readRegularFile("big", atMost: 2000, what: "the answer").count == 2000)
    }

    /// Removing a tree removes the links in it, not what they point at, at any depth up to the
    /// bound; a missing name is not an error.
    @Test func removingATreeRemovesLinksNotWhatTheyPointAt() throws {
        defer { FileSystem.removeTree(root) }
        try FileSystem.makeDirectories(root + "/elsewhere/inner")
        #expect(FileManager.default.createFile(atPath: root + "/elsewhere/inner/keep", contents: Data("k".utf8)))
        let folder = try DirectoryHandle(ownFolder: root + "/t")
        var path = root + "/t/tree"
        for level in 0..<10 {
            try FileSystem.makeDirectories(path)
            #expect(FileManager.default.createFile(atPath: path + "/file\(level)", contents: Data("x".utf8)))
            #expect(symlink(root + "/elsewhere", path + "/to-folder") == 0)
            #expect(symlink(root + "/elsewhere/inner/keep", path + "/to-file") == 0)
            path += "/level\(level)"
        }
        folder.removeTree("tree")
        folder.removeTree("missing")
        #expect(contents(root + "/t").isEmpty)
        #expect(FileManager.default.contents(atPath: root + "/elsewhere/inner/keep") == Data("k".utf8))

        // A release's read-only folders are made writable to be removed, through their own
        // descriptors; a file's mode (it may be a hard link shared elsewhere) and a linked-to
        // folder's are left as they are.
        try FileSystem.makeDirectories(root + "/elsewhere/sealed")
        #expect(chmod(root + "/elsewhere/sealed", 0o555) == 0)
        defer { chmod(root + "/elsewhere/sealed", 0o755) }
        #expect(FileManager.default.createFile(atPath: root + "/elsewhere/shared", contents: Data("s".utf8)))
        #expect(chmod(root + "/elsewhere/shared", 0o444) == 0)
        try FileSystem.makeDirectories(root + "/t/release/a/b")
        #expect(link(root + "/elsewhere/shared", root + "/t/release/a/b/shared") == 0)
        #expect(symlink(root + "/elsewhere/sealed", root + "/t/release/a/sealed") == 0)
        for folder in ["a/b", "a", ""] { #expect(chmod(root + "/t/release/" + folder, 0o555) == 0) }
        #expect(chmod(root + "/t/release/a/b", 0o000) == 0)
        folder.removeTree("release", makingFoldersWritable: true)
        #expect(contents(root + "/t").isEmpty)
        var st = stat()
        #expect(lstat(root + "/elsewhere/sealed", &st) == 0 && st.st_mode & 0o777 == 0o555)
        #expect(lstat(root + "/elsewhere/shared", &st) == 0 && st.st_mode & 0o777 == 0o444 && st.st_nlink == 1)

        // Deeper than the bound: left as it is (each folder in it still holds one), nothing else touched.
        path = root + "/t/deep"
        for level in 0...DirectoryHandle.removalDepth { path += "/\(level)" }
        try FileSystem.makeDirectories(path)
        folder.removeTree("deep")
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(FileManager.default.contents(atPath: root + "/elsewhere/inner/keep") == Data("k".utf8))
    }
}
