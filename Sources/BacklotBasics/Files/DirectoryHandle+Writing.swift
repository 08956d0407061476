import CLinuxSupport

#if canImport(Glibc)
import Glibc
#endif

/// Making, writing and removing files in a folder that another, less trusted process can change
/// (a device container, which the app writes): every step is taken relative to the open folder,
/// one name at a time, and never through a symbolic link. A check of a path followed by a use of
/// the same path can be raced (the folder swapped for a link between the two); a descriptor
/// cannot: what is made lands in the folder that was opened, wherever it has been moved since.
///
/// ```swift
/// let calls = try DirectoryHandle(ownFolder: container + "/.extension-calls")
/// let name = UUID().uuidString
/// let call = try calls.makeFolder(name, mode: 0o700)
/// defer { calls.removeTree(name) }
/// try call.createFile("call.json", contents: bytes, mode: 0o600)
/// ```
extension DirectoryHandle {
    /// Opens the folder at `path`, made (with its missing parents, as `mkdir -p`) when missing,
    /// refusing it when its last name is a symbolic link or not a folder. The folders leading to
    /// it are trusted (a link there is followed).
    /// - Throws: ``BacklotError/Code/untrusted`` when `path` is a link or not a folder;
    ///   ``BacklotError/Code/io`` when it cannot be made or opened.
    /// - Parameter creating: false opens only a folder that is there (``BacklotError/Code/io``
    ///   when it is missing).
    public convenience init(ownFolder path: String, creating: Bool = true) throws {
        if creating {
            let parent = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
            if !parent.isEmpty { try FileSystem.makeDirectories(parent) }
            // Made if missing; whatever is there already is looked at by the open below.
            if mkdir(path, 0o777) != 0 && errno != EEXIST { throw SystemCall.error("create directory", path: path) }
        }
        var fd: Int32
        repeat { fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) } while fd < 0 && errno == EINTR
        guard fd >= 0 else {
            let err = errno
            if err == ELOOP || err == ENOTDIR {
                throw BacklotError(
                    .untrusted, "is a link or not a folder", context: path,
                    hint: "remove it: it is made again as a folder")
            }
            throw SystemCall.error("open directory", path: path, errno: err)
        }
        self.init(descriptor: fd, path: path)
    }

    /// Makes the folder `name` directly in this one, which must not exist yet, and opens it.
    /// - Parameters:
    ///   - name: one name (no `/`, not `.` or `..`).
    ///   - mode: its permissions (less the umask), as for `mkdir`.
    /// - Returns: the new folder, opened; if something replaced it with a link or a file between
    ///   the two steps, the open fails rather than follows it.
    /// - Throws: ``BacklotError/Code/io`` when it exists or cannot be made or opened.
    public func makeFolder(_ name: String, mode: mode_t) throws -> DirectoryHandle {
        let full = try child(name)
        try SystemCall.retrying("create directory", path: full) { mkdirat(descriptor, name, mode) }
        let fd = try SystemCall.retrying("open directory", path: full) {
            openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        }
        return DirectoryHandle(descriptor: fd, path: full)
    }

    /// Creates the regular file `name` directly in this folder, writes `contents` and sets `mode`
    /// on it through its descriptor. The file must not exist: a link, FIFO or file already there
    /// is not opened (`O_CREAT | O_EXCL`), so nothing is ever written through one. A file that
    /// could not be written in full is removed.
    /// - Returns: its path (this folder's path and `name`), for another process to open.
    /// - Throws: ``BacklotError/Code/io`` when it exists or cannot be created or written.
    @discardableResult
    public func createFile(_ name: String, contents: [UInt8], mode: mode_t) throws -> String {
        let full = try child(name)
        let raw = try SystemCall.retrying("create", path: full) {
            openat(descriptor, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        }
        let fd = FileDescriptor(rawValue: raw, path: full)
        defer { fd.close() }
        do {
            try fd.write(contents)
            try SystemCall.retrying("chmod", path: full) { fchmod(raw, mode) }
        } catch {
            unlinkat(descriptor, name, 0)
            throw error
        }
        return full
    }

    /// Opens `name` directly in this folder for writing, made (0600) when missing: never through
    /// a link, and only a regular file of one name (a hard link's other names would see the
    /// writes). The caller closes it.
    /// - Throws: ``BacklotError/Code/untrusted`` when it is a link, not a regular file or a hard
    ///   link; ``BacklotError/Code/io``.
    public func openFileForWriting(_ name: String) throws -> FileDescriptor {
        let full = try child(name)
        var fd: Int32
        repeat {
            fd = openat(descriptor, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        } while fd < 0 && errno == EINTR
        guard fd >= 0 else {
            if errno == ELOOP {
                throw BacklotError(.untrusted, "is a symbolic link", context: full, hint: "remove it")
            }
            throw SystemCall.error("open", path: full)
        }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_nlink == 1 else {
            close(fd)
            throw BacklotError(
                .untrusted, "is not a regular file of its own (a FIFO, a device or a hard link)", context: full,
                hint: "remove it")
        }
        return FileDescriptor(rawValue: fd, path: full)
    }

    /// Reads the regular file at `relative` beneath this folder, through no link (as
    /// ``openRegularFile(_:)`` opens it), when it is at most `limit` bytes.
    /// - Throws: ``BacklotError/Code/invalidSource`` when it is a link, leaves the folder or is not
    ///   a regular file; `code` when it is larger than `limit`; ``BacklotError/Code/io``.
    public func readRegularFile(
        _ relative: String, atMost limit: UInt64, what: String, code: BacklotError.Code = .invalidInput
    ) throws -> [UInt8] {
        let (fd, size) = try openRegularFile(relative)
        defer { fd.close() }
        guard size <= limit else {
            throw BacklotError(code, "\(what) is \(size) bytes; at most \(limit >> 20) MiB are read", context: fd.path)
        }
        return try fd.read(count: Int(size), at: 0)
    }

    /// Removes `name`, directly in this folder, and when it is a folder everything beneath it,
    /// one name at a time relative to each open folder: a link met on the way is removed, never
    /// followed. Missing is not an error; what cannot be removed (or lies more than
    /// ``removalDepth`` folders down) is left.
    /// - Parameter makingFoldersWritable: a folder met without its owner's write and search
    ///   permissions (an installed release's are read-only) is given them first, through its own
    ///   descriptor or with `AT_SYMLINK_NOFOLLOW`, never through a link. Files keep their modes:
    ///   one may be a hard link shared with another folder.
    public func removeTree(_ name: String, makingFoldersWritable: Bool = false) {
        guard (try? child(name)) != nil else { return }
        Self.remove(Array(name.utf8), in: descriptor, depth: 0, makingWritable: makingFoldersWritable)
    }

    /// How many folders down ``removeTree(_:makingFoldersWritable:)`` goes: each level holds an
    /// open descriptor.
    public static let removalDepth = 256

    private static func remove(_ name: [UInt8], in parent: Int32, depth: Int, makingWritable: Bool) {
        let cName = name.map { CChar(bitPattern: $0) } + [0]
        if unlinkat(parent, cName, 0) == 0 || errno == ENOENT { return }
        // Linux answers EISDIR for a folder (EPERM on some file systems).
        guard errno == EISDIR || errno == EPERM, depth < removalDepth else { return }
        guard let fd = openFolder(cName, in: parent, makingWritable: makingWritable) else { return }
        guard let dir = fdopendir(fd) else {
            close(fd)
            return
        }
        var names: [[UInt8]] = []
        try? FileSystem.forEachName(in: dir, path: "") { entry, _ in names.append(entry) }
        for entry in names { remove(entry, in: fd, depth: depth + 1, makingWritable: makingWritable) }
        closedir(dir)  // closes fd too
        unlinkat(parent, cName, AT_REMOVEDIR)
    }

    /// Opens the folder `name` in `parent` without following a link; with `makingWritable`, one
    /// that cannot be opened or changed by its owner is given `u+rwx` first.
    private static func openFolder(_ name: [CChar], in parent: Int32, makingWritable: Bool) -> Int32? {
        func open() -> Int32 {
            var fd: Int32
            repeat {
                fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            } while fd < 0 && errno == EINTR
            return fd
        }
        var fd = open()
        if fd < 0 && errno == EACCES && makingWritable {
            // Not readable: its mode is changed by name, refusing a link (fchmodat2, or glibc's
            // O_PATH descriptor through /proc), then it is opened again.
            guard fchmodat(parent, name, 0o700, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
            fd = open()
        }
        guard fd >= 0 else { return nil }
        var st = stat()
        if makingWritable, fstat(fd, &st) == 0, st.st_mode & 0o700 != 0o700 {
            fchmod(fd, (st.st_mode & 0o7777) | 0o700)
        }
        return fd
    }

    /// Opens the folder `name` directly in this one, refusing a link or anything but a folder.
    /// - Throws: ``BacklotError/Code/untrusted`` when it is a link or not a folder;
    ///   ``BacklotError/Code/io`` when it cannot be opened.
    public func openFolder(_ name: [UInt8]) throws -> DirectoryHandle {
        let full = path + "/" + String(decoding: name, as: UTF8.self)
        let cName = name.map { CChar(bitPattern: $0) } + [0]
        var fd: Int32
        repeat {
            fd = openat(descriptor, cName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        } while fd < 0 && errno == EINTR
        guard fd >= 0 else {
            if errno == ELOOP || errno == ENOTDIR {
                throw BacklotError(.untrusted, "is a link or not a folder", context: full)
            }
            throw SystemCall.error("open directory", path: full)
        }
        return DirectoryHandle(descriptor: fd, path: full)
    }

    /// This folder's entries with what `fstatat` (not following a link) says of each, nil for one
    /// removed since it was listed; `.` and `..` left out, in no particular order.
    /// - Throws: ``BacklotError/Code/io`` when the folder cannot be read.
    public func entries() throws -> [(name: [UInt8], status: FileSystem.Status?)] {
        // A second descriptor of the same folder, for the listing (closedir closes it).
        let fd = try SystemCall.retrying("open directory", path: path) {
            openat(descriptor, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        guard let dir = fdopendir(fd) else {
            let error = SystemCall.error("open directory", path: path)
            close(fd)
            throw error
        }
        defer { closedir(dir) }
        var names: [[UInt8]] = []
        try FileSystem.forEachName(in: dir, path: path) { name, _ in names.append(name) }
        return names.map { name in
            var st = stat()
            let cName = name.map { CChar(bitPattern: $0) } + [0]
            return (name, fstatat(descriptor, cName, &st, AT_SYMLINK_NOFOLLOW) == 0 ? FileSystem.Status(st) : nil)
        }
    }

    /// Sets the mode of `name` directly in this folder, never through a link (`fchmodat` with
    /// `AT_SYMLINK_NOFOLLOW`: a link swapped in since it was looked at is refused, not followed).
    /// - Throws: ``BacklotError/Code/io`` when it cannot be set (or `name` is now a link).
    public func setMode(_ name: [UInt8], _ mode: mode_t) throws {
        let cName = name.map { CChar(bitPattern: $0) } + [0]
        try SystemCall.retrying("chmod", path: path + "/" + String(decoding: name, as: UTF8.self)) {
            fchmodat(descriptor, cName, mode, AT_SYMLINK_NOFOLLOW)
        }
    }

    /// Removes the file (or link, or empty folder's entry, never what a link points at) `name`
    /// directly in this folder; missing is not an error.
    /// - Throws: ``BacklotError/Code/io`` when it cannot be removed.
    public func removeFile(_ name: [UInt8]) throws {
        let cName = name.map { CChar(bitPattern: $0) } + [0]
        if unlinkat(descriptor, cName, 0) != 0 && errno != ENOENT {
            throw SystemCall.error("remove", path: path + "/" + String(decoding: name, as: UTF8.self))
        }
    }

    /// Whether something (a link counts, not followed) is at `name` directly in this folder.
    public func contains(_ name: String) -> Bool {
        var st = stat()
        return (try? child(name)) != nil && fstatat(descriptor, name, &st, AT_SYMLINK_NOFOLLOW) == 0
    }

    /// Renames `name` in this folder to `newName` in `folder` (the same file system), never
    /// replacing what is there (`renameat2` with `RENAME_NOREPLACE`) and following no link: both
    /// names are taken relative to their folders' descriptors.
    /// - Throws: ``BacklotError/Code/io`` when something is at `newName` already, or the rename fails.
    public func move(_ name: String, to folder: DirectoryHandle, as newName: String) throws {
        _ = try child(name)
        try Self.renameWithoutReplacing(descriptor, name, folder.descriptor, newName, path: try folder.child(newName))
    }

    /// Renames the file at `path` (the caller's, named as it was given) to `name` in this folder,
    /// never replacing what is there and never through a link this folder was swapped for.
    /// - Throws: ``BacklotError/Code/io`` when something is at `name` already, or the rename fails.
    public func moveIn(from path: String, as name: String) throws {
        try Self.renameWithoutReplacing(AT_FDCWD, path, descriptor, name, path: try child(name))
    }

    /// `renameat2` with `RENAME_NOREPLACE`; on a file system that does not take the flag (NFS,
    /// 9p, most FUSE ones answer `EINVAL`), a plain `renameat` once nothing is found at the new
    /// name (the one place a rename here can replace a file another process made meanwhile).
    private static func renameWithoutReplacing(
        _ oldFolder: Int32, _ old: String, _ newFolder: Int32, _ new: String, path: String
    ) throws {
        var result: Int32
        repeat { result = clinux_rename_noreplace(oldFolder, old, newFolder, new) } while result < 0 && errno == EINTR
        if result < 0 && (errno == EINVAL || errno == ENOSYS) {
            var st = stat()
            if fstatat(newFolder, new, &st, AT_SYMLINK_NOFOLLOW) == 0 {
                throw SystemCall.error("rename", path: path, errno: EEXIST)
            }
            repeat { result = renameat(oldFolder, old, newFolder, new) } while result < 0 && errno == EINTR
        }
        guard result == 0 else { throw SystemCall.error("rename", path: path) }
    }

    /// The path of `name` in this folder, once `name` is checked to be one plain name.
    private func child(_ name: String) throws -> String {
        guard !name.isEmpty, name != ".", name != "..", !name.utf8.contains(0x2F), !name.utf8.contains(0) else {
            throw BacklotError(
                .invalidInput, "is not one plain file name", context: name,
                hint: "give a name without a slash, other than . and ..")
        }
        return path + "/" + name
    }
}
