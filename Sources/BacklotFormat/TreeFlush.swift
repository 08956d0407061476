import BacklotBasics
import CLinuxSupport

#if canImport(Glibc)
import Glibc
#endif

/// Makes a freshly written tree durable with one flush of its file system, instead of one
/// blocking `fsync` per file: `syncfs` writes back every dirty file and folder of the file
/// system and waits for the journal, which for tens of thousands of small files is one commit
/// rather than tens of thousands. Extraction and installs call it after every file is written
/// and checked, and before the rename that makes the tree visible (the durability rule).
///
/// ```swift
/// try TreeFlush.syncFileSystem(holding: stagingFolder)   // then rename(stagingFolder, target)
/// ```
public enum TreeFlush {
    /// Flushes the file system that holds `path` (a file or folder).
    /// - Throws: ``BacklotError/Code/io`` when `path` cannot be opened, or the flush reports a
    ///   write-back error (a file that did not reach the disk).
    public static func syncFileSystem(holding path: String) throws {
        let fd = try SystemCall.retrying("open", path: path) { open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
        defer { close(fd) }
        _ = try SystemCall.retrying("syncfs", path: path) { clinux_syncfs(fd) }
    }
}
