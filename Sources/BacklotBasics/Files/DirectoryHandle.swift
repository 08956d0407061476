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
    /// The open directory (see DirectoryHandle+Writing.swift for what is made beneath it).
    let descriptor: Int32

    /// Opens `path` (which must be a directory).
    /// - Throws: ``BacklotError/Code/io`` when it cannot be opened.
    public init(path: String) throws {
        guard let real = FileSystem.realPath(path) else { throw SystemCall.error("resolve", path: path) }
        self.path = real
        descriptor = try SystemCall.retrying("open", path: real) { open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
    }

    /// Takes over `descriptor`, an open directory that `path` names in messages.
    init(descriptor: Int32, path: String) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// The status of the file at `relative`, found strictly beneath the directory and through no
    /// symbolic link as ``openRegularFile(_:)`` finds it, without opening it for reading (openat2
    /// with `O_PATH`, then `fstat`); nil when nothing is there, the path leaves the directory or
    /// passes through a link, or the kernel has no openat2 (this never falls back to a check
    /// that could be raced).
    ///
    /// ```swift
    /// if let st = root.statusBeneath("v1/keys/root.json") { print(st.st_ino) }
    /// ```
    public func statusBeneath(_ relative: String) -> stat? {
        var fd: Int32
        repeat { fd = clinux_open_path_beneath(descriptor, relative) } while fd < 0 && errno == EINTR
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        return fstat(fd, &st) == 0 ? st : nil
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
        if fd < 0 && (errno == ENOSYS || errno == EPERM) && !relative.isEmpty && relative != "." && relative != ".."
            && !relative.utf8.contains(0x2F)
        {
            // One name: opened relative to the directory itself, not followed if it is a link.
            repeat {
                fd = openat(descriptor, relative, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
            } while fd < 0 && errno == EINTR
        } else if fd < 0 && (errno == ENOSYS || errno == EPERM) {
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
