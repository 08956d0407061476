import BacklotBasics
import CLinuxSupport

#if canImport(Glibc)
import Glibc
#endif

/// Makes a freshly written tree durable before the rename that makes it visible (the durability
/// rule): extraction and installs call it after every file is written and checked.
///
/// A tree of few files is flushed file by file and folder by folder, so that the flush waits for
/// those files alone. A tree of many is flushed with one `syncfs` of its file system, which for
/// tens of thousands of small files is one journal commit rather than tens of thousands, but
/// which also waits for every other writer's dirty pages on that file system: on a device, other
/// apps'; measured, an nginx edge caching 128 MiB on the disk a device installs to made the
/// device's one `syncfs` wait for the edge's cache too (docs/benchmarks.md, the cold edge).
///
/// ```swift
/// try TreeFlush.flush(tree: stagingFolder, files: ["a.bin", "levels/1.dat"])   // then rename(stagingFolder, target)
/// try TreeFlush.syncFileSystem(holding: stagingFolder)
/// ```
public enum TreeFlush {
    /// The most files ``flush(tree:files:)`` flushes one by one (an `fsync` each, about 0.2 ms
    /// on this project's machines); a tree of more is flushed with one `syncfs`.
    public static let fewFiles = 32

    /// Flushes the tree at `root` whose files are `files` (paths relative to `root`, `/`
    /// between components): one `fsync` per file and per folder on their way when there are at
    /// most ``fewFiles``, else ``syncFileSystem(holding:)``.
    /// - Throws: ``BacklotError/Code/io`` when a file or folder cannot be opened or its flush
    ///   reports a write-back error.
    public static func flush(tree root: String, files: some Collection<String>) throws {
        guard files.count <= fewFiles else { return try syncFileSystem(holding: root) }
        var folders: Set<String> = [root]
        for file in files {
            try sync(root + "/" + file, flags: 0)
            var parent = Substring(file)
            while let slash = parent.utf8.lastIndex(of: UInt8(ascii: "/")) {
                parent = parent[..<slash]
                folders.insert(root + "/" + parent)
            }
        }
        for folder in folders.sorted(by: { $0.utf8.count > $1.utf8.count }) {
            try sync(folder, flags: O_DIRECTORY)
        }
    }

    /// Flushes the file system that holds `path` (a file or folder).
    /// - Throws: ``BacklotError/Code/io`` when `path` cannot be opened, or the flush reports a
    ///   write-back error (a file that did not reach the disk).
    public static func syncFileSystem(holding path: String) throws {
        let fd = try SystemCall.retrying("open", path: path) { open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
        defer { close(fd) }
        _ = try SystemCall.retrying("syncfs", path: path) { clinux_syncfs(fd) }
    }

    /// `fsync` of one file or folder, never through a link.
    private static func sync(_ path: String, flags: Int32) throws {
        let fd = try SystemCall.retrying("open", path: path) { open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | flags) }
        defer { close(fd) }
        _ = try SystemCall.retrying("fsync", path: path) { fsync(fd) }
    }
}
