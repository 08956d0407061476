import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Small, exact file-system operations that Foundation does not give on Linux: raw directory
/// entries (names that are not UTF-8 included), `lstat` kinds, and directory syncs.
public enum FileSystem {
    /// The kind of a directory entry, from `lstat` (links are not followed).
    public enum Kind: Sendable, Equatable {
        case regular, directory, symlink, socket, fifo, characterDevice, blockDevice, unknown

        init(mode: mode_t) {
            switch mode & S_IFMT {
            case S_IFREG: self = .regular
            case S_IFDIR: self = .directory
            case S_IFLNK: self = .symlink
            case S_IFSOCK: self = .socket
            case S_IFIFO: self = .fifo
            case S_IFCHR: self = .characterDevice
            case S_IFBLK: self = .blockDevice
            default: self = .unknown
            }
        }

        /// A phrase for error messages ("a socket").
        public var phrase: String {
            switch self {
            case .regular: "a regular file"
            case .directory: "a directory"
            case .symlink: "a symbolic link"
            case .socket: "a socket"
            case .fifo: "a named pipe (FIFO)"
            case .characterDevice: "a character device"
            case .blockDevice: "a block device"
            case .unknown: "a special file"
            }
        }
    }

    /// What `lstat` says of a path.
    public struct Status: Sendable {
        public let kind: Kind
        public let size: UInt64
        public let mode: UInt32
        /// The file's identity (device and inode) and how many names it has (hard links).
        public var device: UInt64 = 0
        public var inode: UInt64 = 0
        public var linkCount: UInt64 = 0
        /// The bytes the file takes on its file system (its blocks, which a sparse file has fewer of).
        public var allocatedBytes: UInt64 = 0
        /// The user who owns it.
        public var owner: UInt32 = 0

        /// Whether it belongs to the user this process acts as (its effective user ID).
        public var isOwnedByThisProcessUser: Bool { owner == geteuid() }

        init(_ st: stat) {
            kind = Kind(mode: st.st_mode)
            size = UInt64(st.st_size)
            mode = UInt32(st.st_mode & 0o7777)
            device = UInt64(st.st_dev)
            inode = UInt64(st.st_ino)
            linkCount = UInt64(st.st_nlink)
            allocatedBytes = UInt64(clamping: st.st_blocks) &* 512
            owner = st.st_uid
        }

        /// Whether both name the same file (device and inode).
        public func isSameFile(as other: Status) -> Bool { device == other.device && inode == other.inode }
    }

    /// `lstat(path)`, or nil when the path does not exist.
    public static func linkStatus(_ path: String) throws -> Status? {
        var st = stat()
        if lstat(path, &st) != 0 {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw SystemCall.error("lstat", path: path)
        }
        return Status(st)
    }

    /// `stat(path)` (links followed), or nil when the path does not exist.
    public static func status(_ path: String) throws -> Status? {
        var st = stat()
        if stat(path, &st) != 0 {
            if errno == ENOENT || errno == ENOTDIR || errno == ELOOP { return nil }
            throw SystemCall.error("stat", path: path)
        }
        return Status(st)
    }

    /// `fstat` of an open file.
    public static func status(of descriptor: FileDescriptor) throws -> Status {
        var st = stat()
        try SystemCall.retrying("fstat", path: descriptor.path) { fstat(descriptor.rawValue, &st) }
        return Status(st)
    }

    /// Sets the mode of the regular file at `path`, never through a link (opened with
    /// `O_NOFOLLOW`, changed with `fchmod`).
    /// - Throws: ``BacklotError/Code/io`` when it cannot be opened or is not a regular file.
    public static func setMode(_ path: String, _ mode: mode_t) throws {
        let fd = try SystemCall.retrying("open", path: path) {
            open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            throw BacklotError(
                .io, "is not a regular file", context: path,
                hint: "something replaced it while it was installed; try again")
        }
        try SystemCall.retrying("chmod", path: path) { fchmod(fd, mode) }
    }

    /// Makes `new` a hard link to the file at `existing` (`link(2)`: a link at `existing` is not
    /// followed).
    /// - Throws: ``BacklotError/Code/io`` naming both paths and the system's reason.
    public static func hardLink(_ existing: String, to new: String) throws {
        _ = try SystemCall.retrying("link", path: new) { link(existing, new) }
    }

    /// Moves `source` over `target` in one step (`rename(2)`: whoever opens `target` sees the old
    /// file or the new one, never neither).
    /// - Throws: ``BacklotError/Code/io`` naming the paths and the system's reason.
    public static func rename(_ source: String, to target: String) throws {
        _ = try SystemCall.retrying("rename", path: target) { Glibc.rename(source, target) }
    }

    /// Whether anything (even a dangling link) exists at `path`.
    public static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// The names in a directory as raw bytes, without `.` and `..`, in no particular order.
    public static func entryNames(_ path: String) throws -> [[UInt8]] {
        guard let dir = opendir(path) else { throw SystemCall.error("open directory", path: path) }
        defer { closedir(dir) }
        var names: [[UInt8]] = []
        try forEachName(in: dir, path: path) { name, _ in names.append(name) }
        return names
    }

    /// Calls `body` with the name of each entry `dir` lists, `.` and `..` left out, and the entry
    /// itself, whose `d_name` is the same name ended by a NUL.
    static func forEachName(
        in dir: OpaquePointer, path: String, _ body: ([UInt8], UnsafeMutablePointer<dirent>) throws -> Void
    ) throws {
        while true {
            errno = 0
            guard let entry = readdir(dir) else {
                if errno != 0 { throw SystemCall.error("read directory", path: path) }
                return
            }
            guard let name = entryName(entry) else { continue }
            try body(name, entry)
        }
    }

    /// The entries of a directory with what `lstat` says of each (nil for an entry removed since
    /// it was listed), without `.` and `..`, in no particular order.
    ///
    /// The directory is opened once (as `opendir` does: a link at `path` is followed) and each
    /// entry is looked at relative to it (`fstatat` with `AT_SYMLINK_NOFOLLOW`): the kernel resolves one
    /// name per entry, not the whole path again, which is most of a large tree's walk.
    ///
    /// ```swift
    /// for entry in try FileSystem.entries(folder) where entry.status?.kind == .regular { … }
    /// ```
    /// - Parameter expected: what an earlier `lstat` said of the directory, when it was found in
    ///   a walk: the directory opened must be that one (a folder swapped for a link or another
    ///   folder since is refused, not listed).
    /// - Throws: ``BacklotError/Code/io`` when the directory cannot be opened or read, is not the
    ///   one `expected`, or an entry's status cannot be read for another reason than its removal.
    public static func entries(_ path: String, expected: Status? = nil) throws -> [(name: [UInt8], status: Status?)] {
        let fd = try SystemCall.retrying("open directory", path: path) {
            open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        guard let dir = fdopendir(fd) else {
            let error = SystemCall.error("open directory", path: path)
            close(fd)
            throw error
        }
        defer { closedir(dir) }  // closes fd too
        if let expected {
            var st = stat()
            guard fstat(fd, &st) == 0 else { throw SystemCall.error("fstat", path: path) }
            guard Status(st).isSameFile(as: expected) else {
                throw BacklotError(
                    .io, "the folder was replaced while it was being listed", context: path,
                    hint: "list it again once nothing is changing the tree")
            }
        }
        var entries: [(name: [UInt8], status: Status?)] = []
        try forEachName(in: dir, path: path) { name, entry in
            var st = stat()
            // The entry's own NUL-ended name: no copy of the name is made for the call.
            let found = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                raw.withMemoryRebound(to: CChar.self) { fstatat(fd, $0.baseAddress!, &st, AT_SYMLINK_NOFOLLOW) }
            }
            guard found == 0 else {
                let err = errno
                guard err == ENOENT || err == ENOTDIR else {
                    throw SystemCall.error(
                        "lstat", path: path + "/" + String(decoding: name, as: UTF8.self), errno: err)
                }
                return entries.append((name, nil))
            }
            entries.append((name, Status(st)))
        }
        return entries
    }

    /// A directory entry's name as bytes, or nil for `.` and `..`.
    private static func entryName(_ entry: UnsafeMutablePointer<dirent>) -> [UInt8]? {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw -> [UInt8] in
            let bytes = raw.bindMemory(to: UInt8.self)
            let length = bytes.firstIndex(of: 0) ?? bytes.count
            return Array(bytes[..<length])
        }
        return name == [0x2E] || name == [0x2E, 0x2E] ? nil : name
    }

    /// The canonical absolute path (`realpath`), or nil when it does not resolve.
    public static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Creates a directory; succeeds if it already exists as a directory.
    public static func makeDirectory(_ path: String, mode: mode_t = 0o755) throws {
        if mkdir(path, mode) != 0 {
            let err = errno
            if err == EEXIST, (try? linkStatus(path))??.kind == .directory { return }
            throw SystemCall.error("create directory", path: path, errno: err)
        }
    }

    /// Creates a directory and every missing folder on its way (`mkdir -p`); succeeds where they
    /// exist as directories (a link to a directory counts, as for `mkdir -p`). New folders get
    /// `mode` less the umask.
    /// - Throws: ``BacklotError/Code/io`` naming the folder that could not be made and why (with
    ///   a hint for a full disk or a refused permission), or that is not a directory.
    ///
    /// ```swift
    /// try FileSystem.makeDirectories(container + "/packs/Levels")
    /// ```
    public static func makeDirectories(_ path: String, mode: mode_t = 0o777) throws {
        if (try? status(path))??.kind == .directory { return }
        var prefix = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += (prefix.isEmpty || prefix.hasSuffix("/") ? "" : "/") + part
            guard mkdir(prefix, mode) != 0 else { continue }
            let err = errno
            if err == EEXIST, (try? status(prefix))??.kind == .directory { continue }
            throw SystemCall.error("create directory", path: prefix, errno: err)
        }
    }

    /// Creates a fresh, empty, uniquely named directory inside `parent` (mkdtemp).
    public static func makeTemporaryDirectory(in parent: String, prefix: String) throws -> String {
        var template = Array("\(parent)/\(prefix)XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else { throw SystemCall.error("create a temporary directory", path: parent) }
        return template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Removes a file or a whole tree; a missing path is not an error.
    public static func removeTree(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Flushes a directory so that a rename inside it survives a crash. Best effort.
    public static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    /// Flushes the directory that holds `path`.
    public static func syncDirectory(containing path: String) {
        syncDirectory(URL(fileURLWithPath: path).deletingLastPathComponent().path)
    }

    /// Free bytes available to this user on the file system holding `path`, or nil if unknown.
    public static func availableBytes(at path: String) -> UInt64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }
}
