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
