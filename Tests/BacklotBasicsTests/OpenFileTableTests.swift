import BacklotBasics
import Foundation
import Testing

/// What frees space asks before deleting: is a file, or a file in a folder, open or mapped by any
/// process (this one's included)?
@Suite struct OpenFileTableTests {
    @Test func aFileHeldOpenOrMappedIsSeenAsAFileAndThroughItsFolder() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("open-files-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/pack", withIntermediateDirectories: true)
        func at(_ name: String) -> String { root + "/" + name }
        let file = at("pack/readme.txt")
        let other = at("other.txt")
        try Data("hello".utf8).write(to: URL(fileURLWithPath: file))
        try Data("x".utf8).write(to: URL(fileURLWithPath: other))
        #expect(!OpenFileTable.anyHeld(under: file) && !OpenFileTable.anyHeld(under: at("pack")))
        // Opened close-on-exec: a process another test starts meanwhile must not inherit it (a
        // FileHandle's descriptor is inherited, and held by that child after this one closes it).
        let handle = try FileDescriptor.openForReading(file)
        #expect(OpenFileTable.anyHeld(under: file))
        #expect(OpenFileTable.anyHeld(under: at("pack")))
        #expect(!OpenFileTable.anyHeld(under: other), "another file of the same folder is not held")
        #expect(!OpenFileTable.anyHeld(under: at("pac")), "a name that only starts alike is not held")
        handle.close()
        #expect(!OpenFileTable.anyHeld(under: file) && !OpenFileTable.anyHeld(under: at("pack")))
        // Mapped (as contents(at:) maps a file) and closed: still held while the mapping lives.
        let mapped = try Data(contentsOf: URL(fileURLWithPath: file), options: .alwaysMapped)
        #expect(OpenFileTable.anyHeld(under: at("pack")) || mapped.count < 4096, "a small file may be read, not mapped")
        withExtendedLifetime(mapped) {}
        #expect(!OpenFileTable.anyHeld(under: at("missing")))
    }
}
