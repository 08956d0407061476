import BacklotBasics
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A new folder that appears whole or not at all: written into a hidden folder beside it, the file
/// system flushed once, then renamed into place (`extract` of a pack or an Apple Archive). On any
/// error, or a signal that ends the process, what was written is removed.
///
/// ```swift
/// try StagedFolder.make("Tutorial", needing: 5_000_000, of: "the pack") { staging in
///     try writeFiles(into: staging)
/// }
/// ```
public enum StagedFolder {
    /// Makes `directory` with what `body` writes into the staging folder it is given.
    /// - Parameter bytes: what the content needs on disk, checked against the free space first.
    /// - Throws: ``BacklotError/Code/alreadyExists`` when `directory` exists and is not an empty
    ///   folder; ``BacklotError/Code/io`` when its parent is missing or too little space is free;
    ///   what `body`, the flush and the rename throw.
    public static func make<T>(
        _ directory: String, needing bytes: UInt64?, of what: String, _ body: (String) throws -> T
    ) throws -> T {
        let target = URL(fileURLWithPath: directory).standardizedFileURL.path
        let parent = URL(fileURLWithPath: target).deletingLastPathComponent().path
        if let st = try FileSystem.linkStatus(target) {
            guard st.kind == .directory, try FileSystem.entryNames(target).isEmpty else {
                throw BacklotError(
                    .alreadyExists, "the target exists and is not an empty directory", context: directory,
                    hint: "choose a new path; extract never mixes \(what) into existing files")
            }
        }
        guard let pst = try FileSystem.status(parent), pst.kind == .directory else {
            throw BacklotError(.io, "the parent folder does not exist", context: parent, hint: "create it first")
        }
        if let bytes, let free = FileSystem.availableBytes(at: parent), free < bytes + (1 << 20) {
            throw BacklotError(
                .io, "\(what) needs \(bytes) bytes but only \(free) are free", context: parent,
                hint: "free some disk space")
        }
        let staging = try FileSystem.makeTemporaryDirectory(
            in: parent, prefix: ".\(URL(fileURLWithPath: target).lastPathComponent).partial-")
        TemporaryFiles.shared.register(staging)
        defer { TemporaryFiles.shared.unregister(staging) }
        do {
            let result = try body(staging)
            // One flush of the file system for every file and folder written (not one blocking
            // fsync per file), before the rename makes any of them visible.
            try TreeFlush.syncFileSystem(holding: staging)
            if FileSystem.exists(target) { _ = rmdir(target) }
            try SystemCall.retrying("rename", path: target) { rename(staging, target) }
            FileSystem.syncDirectory(parent)
            return result
        } catch {
            FileSystem.removeTree(staging)
            throw error
        }
    }
}
