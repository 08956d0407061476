import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A file that becomes visible at its path only once it is complete.
///
/// Bytes go to a hidden temporary file beside the destination; ``commit()`` flushes it to disk,
/// renames it into place and flushes the directory. If the work fails, ``discard()`` (or
/// deinitialisation) removes the temporary file, so nothing half-written is ever left behind.
///
/// ```swift
/// let file = try AtomicFile(path: "out.pack", overwrite: false)
/// try file.descriptor.write(bytes)
/// try file.commit()
/// ```
public final class AtomicFile {
    /// Where the file will appear.
    public let path: String
    /// The temporary file being written.
    public let temporaryPath: String
    /// The descriptor to write through.
    public let descriptor: FileDescriptor
    private let overwrite: Bool
    private var finished = false

    /// Creates the temporary file.
    /// - Throws: ``BacklotError/Code/alreadyExists`` when `path` exists and `overwrite` is false;
    ///   ``BacklotError/Code/io`` when the directory cannot be written.
    public init(path: String, overwrite: Bool, mode: mode_t = 0o644) throws {
        self.path = path
        self.overwrite = overwrite
        if !overwrite, FileSystem.exists(path) {
            throw BacklotError(
                .alreadyExists, "the output file already exists", context: path,
                hint: "choose another path, or pass --force to replace it")
        }
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        var template = Array("\(directory)/.\(url.lastPathComponent).tmp-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw SystemCall.error("create a temporary file", path: directory) }
        temporaryPath = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        fchmod(fd, mode)
        descriptor = FileDescriptor(rawValue: fd, path: temporaryPath)
    }

    /// Flushes the file and renames it into place.
    public func commit() throws {
        precondition(!finished, "AtomicFile committed or discarded twice")
        do {
            try descriptor.sync()
            descriptor.close()
            finished = true
            if !overwrite {
                // link() fails if the destination appeared meanwhile: never replace what someone else wrote.
                if link(temporaryPath, path) != 0 {
                    let err = errno
                    unlink(temporaryPath)
                    if err == EEXIST {
                        throw BacklotError(
                            .alreadyExists, "the output file already exists", context: path,
                            hint: "choose another path, or pass --force to replace it")
                    }
                    throw SystemCall.error("link", path: path, errno: err)
                }
                unlink(temporaryPath)
            } else {
                try SystemCall.retrying("rename", path: path) { rename(temporaryPath, path) }
            }
            FileSystem.syncDirectory(containing: path)
        } catch {
            if !finished { discard() } else { unlink(temporaryPath) }
            throw error
        }
    }

    /// Removes the temporary file. Safe to call more than once.
    public func discard() {
        guard !finished else { return }
        finished = true
        descriptor.close()
        unlink(temporaryPath)
    }

    deinit { discard() }
}
