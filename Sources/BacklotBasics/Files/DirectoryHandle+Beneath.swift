import CLinuxSupport

#if canImport(Glibc)
import Glibc
#endif

/// Making, opening, linking and changing files at relative paths beneath a folder that another,
/// less trusted process can change while this runs (a release being assembled in a device
/// container, which the app writes): each path is resolved by the kernel strictly beneath the
/// folder and through no symbolic link (openat2 with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), so
/// a folder inside it swapped for a link sends nothing elsewhere. On kernels without openat2 the
/// path is used from the folder's path, its last name not followed (what could be done before).
///
/// ```swift
/// let release = try DirectoryHandle(ownFolder: partial)
/// try release.makeFolderBeneath("Levels/1")
/// let fd = release.openBeneath("Levels/1/map.bin", flags: O_RDWR | O_CREAT | O_EXCL, mode: 0o644)
/// ```
extension DirectoryHandle {
    /// Opens `relative` beneath this folder with `flags` (`O_CLOEXEC` and `O_NOFOLLOW` added),
    /// made with `mode` when `flags` hold `O_CREAT`. Returns the raw descriptor, or -1 with `errno`
    /// set (`EXDEV` or `ELOOP` for a path that leaves the folder or passes through a link), for
    /// callers that decide on `EEXIST`.
    public func openBeneath(_ relative: String, flags: Int32, mode: mode_t = 0) -> Int32 {
        var fd: Int32
        repeat {
            fd = clinux_open_beneath_with(descriptor, relative, flags, UInt32(mode))
        } while fd < 0 && errno == EINTR
        if fd < 0 && (errno == ENOSYS || errno == EPERM) {
            let full = path + "/" + relative
            repeat { fd = open(full, flags | O_CLOEXEC | O_NOFOLLOW, mode) } while fd < 0 && errno == EINTR
        }
        return fd
    }

    /// Makes the folder `relative` beneath this one (its parent must be there: make the
    /// ancestors first, outermost first), reached through no link; one already there as a
    /// folder is fine.
    /// - Throws: ``BacklotError/Code/io`` when it cannot be made, or something not a folder is there.
    public func makeFolderBeneath(_ relative: String, mode: mode_t = 0o755) throws {
        let full = path + "/" + relative
        try withParent(of: relative) { parent, name in
            if mkdirat(parent, name, mode) == 0 { return }
            let err = errno
            var st = stat()
            if err == EEXIST, fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0, st.st_mode & S_IFMT == S_IFDIR {
                return
            }
            throw SystemCall.error("create directory", path: full, errno: err)
        }
    }

    /// Sets the mode of the file at `relative` beneath this folder through its own descriptor
    /// (opened for reading, through no link).
    /// - Throws: ``BacklotError/Code/io`` when it cannot be opened or changed.
    public func setModeBeneath(_ relative: String, _ mode: mode_t) throws {
        let full = path + "/" + relative
        let fd = openBeneath(relative, flags: O_RDONLY | O_NONBLOCK)
        guard fd >= 0 else { throw SystemCall.error("open", path: full) }
        defer { close(fd) }
        try SystemCall.retrying("chmod", path: full) { fchmod(fd, mode) }
    }

    /// Removes the file (not a folder) at `relative` beneath this folder; missing is not an error.
    /// - Throws: ``BacklotError/Code/io`` when it cannot be removed.
    public func removeFileBeneath(_ relative: String) throws {
        let full = path + "/" + relative
        try withParent(of: relative) { parent, name in
            if unlinkat(parent, name, 0) != 0 && errno != ENOENT { throw SystemCall.error("remove", path: full) }
        }
    }

    /// Makes `relative` beneath this folder a new hard link to the file at `source` (the
    /// caller's path; a link there is not followed), replacing nothing.
    /// - Throws: ``BacklotError/Code/io`` when something is there or the link cannot be made.
    public func linkBeneath(from source: String, as relative: String) throws {
        let full = path + "/" + relative
        try withParent(of: relative) { parent, name in
            try SystemCall.retrying("link", path: full) { linkat(AT_FDCWD, source, parent, name, 0) }
        }
    }

    /// What `lstat` says of `relative` beneath this folder (its last name not followed), nil when
    /// nothing is there or the way to it leaves the folder or passes through a link.
    public func linkStatusBeneath(_ relative: String) -> FileSystem.Status? {
        (try? withParent(of: relative) { parent, name -> FileSystem.Status? in
            var st = stat()
            return fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? FileSystem.Status(st) : nil
        }) ?? nil
    }

    /// Calls `body` with a descriptor of the folder that holds `relative` (this one, or one
    /// beneath it found through no link) and the last name of `relative`.
    private func withParent<T>(of relative: String, _ body: (Int32, String) throws -> T) throws -> T {
        guard let slash = relative.lastIndex(of: "/") else { return try body(descriptor, relative) }
        let parentPath = String(relative[..<slash])
        let name = String(relative[relative.index(after: slash)...])
        let parent = openBeneath(parentPath, flags: O_PATH | O_DIRECTORY)
        guard parent >= 0 else { throw SystemCall.error("open directory", path: path + "/" + parentPath) }
        defer { close(parent) }
        return try body(parent, name)
    }
}
