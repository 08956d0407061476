import BacklotBasics
import Foundation

/// A fresh directory for one test, removed by ``remove()``.
public struct TemporaryDirectory: Sendable {
    public let path: String

    public init(_ label: String = "test") throws {
        let base = FileManager.default.temporaryDirectory.path
        path = try FileSystem.makeTemporaryDirectory(in: base, prefix: "backlot-\(label)-")
    }

    /// `path/relative`.
    public func at(_ relative: String) -> String { path + "/" + relative }

    /// Writes a file, creating its folders.
    @discardableResult
    public func write(_ relative: String, _ bytes: [UInt8], mode: Int = 0o644) throws -> String {
        let full = at(relative)
        try FileManager.default.createDirectory(
            atPath: URL(fileURLWithPath: full).deletingLastPathComponent().path,
            withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: full, contents: Data(bytes), attributes: [.posixPermissions: mode])
        else {
            throw BacklotError(.io, "could not write", context: full)
        }
        return full
    }

    @discardableResult
    public func write(_ relative: String, _ text: String, mode: Int = 0o644) throws -> String {
        try write(relative, Array(text.utf8), mode: mode)
    }

    /// Writes a program the test will run. The bytes are written by a child process (`cp`), never
    /// through a descriptor of this one: a descriptor open for writing here, inherited for an
    /// instant by a process another test is spawning, makes `execve` of the file fail with
    /// `ETXTBSY` ("text file busy").
    @discardableResult
    public func writeExecutable(_ relative: String, _ text: String) throws -> String {
        let staged = try write(relative + ".source", text)
        let full = at(relative)
        let copy = try ChildProcess.run(
            executable: "/bin/cp", arguments: [staged, full], environment: [:], until: .now + .seconds(60))
        guard copy.succeeded, chmod(full, 0o755) == 0 else {
            throw BacklotError(.io, "could not write the program", context: full)
        }
        return full
    }

    public func read(_ relative: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: at(relative))))
    }

    public func remove() { FileSystem.removeTree(path) }

    /// Names in the directory, sorted (hidden ones included).
    public func listing(_ relative: String = "") throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: relative.isEmpty ? path : at(relative)).sorted()
    }
}

extension TemporaryDirectory {
    /// Wraps an existing folder (it is removed by ``remove()`` like any other).
    public init(existing path: String) {
        self.path = path
    }
}
