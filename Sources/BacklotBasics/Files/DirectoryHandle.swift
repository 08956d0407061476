import CLinuxSupport

#if canImport(Glibc)
import Glibc
#endif

/// An open directory that files are opened beneath, never outside: the one place a path from a
/// list (a selection, a request) is opened relative to a root that an attacker may be changing.
///
/// ``openRegularFile(_:)`` asks the kernel (openat2 with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`)
/// to refuse `..`, absolute paths and a symbolic link anywhere on the way, in one call, then
/// checks with `fstat` that what it opened is a regular file. On kernels without openat2 it
/// resolves the path with realpath, checks it lies beneath the root, and opens with `O_NOFOLLOW`.
///
/// ```swift
/// let root = try DirectoryHandle(path: "/src/game")
/// let (fd, size) = try root.openRegularFile("Levels/1.bin")
/// defer { fd.close() }
/// ```
public final class DirectoryHandle: Sendable {
    /// The directory's resolved path.
    public let path: String
    private let descriptor: Int32

    /// Opens `path` (which must be a directory).
    /// - Throws: ``BacklotError/Code/io`` when it cannot be opened.
    public init(path: String) throws {
        guard let real = FileSystem.realPath(path) else { throw SystemCall.error("resolve", path: path) }
        self.path = real
        descriptor = try SystemCall.retrying("open", path: real) { open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
    }

    deinit { close(descriptor) }

    /// The status of what `relative` names beneath the directory, without following a link at
    /// its last component; nil when nothing is there (or `fstatat` fails).
    ///
    /// Unlike ``openRegularFile(_:)`` this does not refuse links on the way: it says only which
    /// file is there now, for a caller that compares it with a file it opened beneath the
    /// directory before (the same device and inode are the same file, wherever the path went).
    public func linkStatus(_ relative: String) -> stat? {
        guard relative.utf8.first != BytePath.separator else { return nil }  // fstatat would ignore the directory
        var st = stat()
        var result: Int32
        repeat { result = fstatat(descriptor, relative, &st, AT_SYMLINK_NOFOLLOW) } while result != 0 && errno == EINTR
        return result == 0 ? st : nil
    }

    /// Opens `relative` for reading, strictly beneath the directory and through no symbolic
    /// link, and returns it with its size.
    /// - Throws: ``BacklotError/Code/invalidSource`` when the path leaves the directory, passes
    ///   through a link, or is not a regular file (it was swapped since it was listed);
    ///   ``BacklotError/Code/io`` for other failures.
    public func openRegularFile(_ relative: String) throws -> (FileDescriptor, UInt64) {
        let (fd, st) = try openRegularFileWithStatus(relative)
        return (fd, UInt64(st.st_size))
    }

    /// ``openRegularFile(_:)``, with the opened file's whole `fstat` (times, inode), for callers
    /// that derive validators from it (the static tree's ETag and Last-Modified).
    public func openRegularFileWithStatus(_ relative: String) throws -> (FileDescriptor, stat) {
        let full = path + "/" + relative
        var fd: Int32
        repeat { fd = clinux_open_beneath(descriptor, relative) } while fd < 0 && errno == EINTR
        // no openat2 (old kernel, or a seccomp filter that refuses it)
        if fd < 0 && (errno == ENOSYS || errno == EPERM) {
            guard let real = FileSystem.realPath(full), BytePath.isInside(real, path), !BytePath.same(real, path) else {
                throw BacklotError(
                    .invalidSource, "the path leads outside \(path)", context: full,
                    hint: "something changed the tree while it was read; try again once nothing writes to it")
            }
            repeat { fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) } while fd < 0 && errno == EINTR
        }
        guard fd >= 0 else {
            let err = errno
            if err == ELOOP || err == EXDEV {
                throw BacklotError(
                    .invalidSource, "the path passes through a symbolic link or leaves \(path)", context: full,
                    hint:
                        "something replaced a file or folder with a link while it was read; try again once nothing writes to the tree"
                )
            }
            throw SystemCall.error("open", path: full, errno: err)
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let err = errno
            close(fd)
            throw SystemCall.error("fstat", path: full, errno: err)
        }
        guard st.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw BacklotError(
                .invalidSource, "is no longer a regular file", context: full,
                hint: "something replaced it while it was read; try again once nothing writes to the tree")
        }
        return (FileDescriptor(rawValue: fd, path: full), st)
    }
}
