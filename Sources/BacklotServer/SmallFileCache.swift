import BacklotBasics
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc  // `stat`
#endif

/// The published tree's small files (catalogs, key lists, small packs) kept in memory with the
/// headers of their answer, so that the request a device makes most often costs one `fstatat`
/// instead of an open, a status, a read and a close, and no header is formatted again.
///
/// Every use checks the entry against the file the path names now (``FileIdentity``: device,
/// inode, size, mode, modification and change times): a file replaced (the tree's files are
/// replaced by rename, a new inode), written, truncated or removed is read again or is a 404, on
/// the very next request. The check follows no link at the path's last component, and an entry is
/// only ever made from a file opened beneath the root through no link (``DirectoryHandle``): a
/// path that now leads elsewhere can match an entry only if it names the same inode, whose bytes
/// the tree already served.
///
/// **Files changed within the last second are not kept** (``settleTime``, one by default), as git does with an
/// index entry whose file is "racily clean": a file's times move in steps of the kernel's clock
/// tick, so two files written in the same tick, the second reusing the first's inode number and
/// size, would look alike. A file last changed a second ago or more cannot be confused with one
/// written after it was kept.
///
/// Bounded: files up to ``fileLimit`` bytes, ``byteBudget`` bytes and ``entryLimit`` entries in
/// all; past that, others are evicted for the one added.
///
/// ```swift
/// let cache = SmallFileCache()
/// if let file = cache.file(at: "v1/keys/root.json", beneath: root) { send(file.bytes) }
/// ```
final class SmallFileCache: Sendable {
    /// What makes a cached entry still the file: any write, truncation, `chmod`, rename over it
    /// or removal changes one of these.
    struct FileIdentity: Equatable, Sendable {
        let device: UInt64
        let inode: UInt64
        let size: Int64
        let mode: UInt32
        let modified: Int64
        let modifiedNanos: Int64
        let changed: Int64
        let changedNanos: Int64

        init(_ st: stat) {
            device = UInt64(st.st_dev)
            inode = UInt64(st.st_ino)
            size = Int64(st.st_size)
            mode = UInt32(st.st_mode)
            modified = Int64(st.st_mtim.tv_sec)
            modifiedNanos = Int64(st.st_mtim.tv_nsec)
            changed = Int64(st.st_ctim.tv_sec)
            changedNanos = Int64(st.st_ctim.tv_nsec)
        }
    }

    /// A kept file: its bytes, the status it was read with, and what its answer's headers say.
    struct File: Sendable {
        let identity: FileIdentity
        let status: stat
        let bytes: [UInt8]
        /// What its answers say of it (validators, cache rule, type), made once.
        let headers: StaticTree.FileHeaders
    }

    /// Files larger than this are not kept (by default the server's own limit for answering
    /// with the head, 64 KiB).
    let fileLimit: Int
    /// The most bytes kept in all (16 MiB by default).
    let byteBudget: Int
    /// The most files kept (4,096 by default).
    let entryLimit: Int
    /// How long ago a file must have last changed to be kept, in seconds (1 by default; a test
    /// that never rewrites a file in place may use 0).
    let settleTime: Int64

    init(fileLimit: Int = 64 << 10, byteBudget: Int = 16 << 20, entryLimit: Int = 4096, settleTime: Int64 = 1) {
        self.fileLimit = fileLimit
        self.byteBudget = byteBudget
        self.entryLimit = entryLimit
        self.settleTime = settleTime
    }

    private struct State {
        var files: [String: File] = [:]
        var bytes = 0
    }
    private let state = Mutex(State())

    /// The kept file at `relative`, if it is still the file there; an entry that no longer is
    /// is dropped.
    func file(at relative: String, beneath root: DirectoryHandle) -> File? {
        guard let kept = state.withLock({ $0.files[relative] }) else { return nil }
        guard let now = root.linkStatus(relative), FileIdentity(now) == kept.identity else {
            state.withLock { s in
                if let current = s.files[relative], current.identity == kept.identity {
                    s.files[relative] = nil
                    s.bytes -= current.bytes.count
                }
            }
            return nil
        }
        return kept
    }

    /// Reads the file just opened at `relative` (`fd`, with `status`) and keeps it, when it is
    /// small, settled and unchanged by the read; nil otherwise (the caller answers from `fd`).
    /// The descriptor stays the caller's. `headers` makes the answer's headers from the status.
    func admit(
        _ relative: String, fd: Int32, status: stat, now: Int64 = Int64(Date().timeIntervalSince1970),
        headers: (stat) -> StaticTree.FileHeaders
    ) -> File? {
        let identity = FileIdentity(status)
        guard status.st_size > 0, status.st_size <= fileLimit, identity.changed <= now - settleTime,
            identity.modified <= now - settleTime
        else { return nil }
        let count = Int(status.st_size)
        let descriptor = FileDescriptor(rawValue: fd, path: relative)
        var got = -1
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            got = (try? descriptor.read(into: UnsafeMutableRawBufferPointer(buffer), at: 0)) ?? -1
            initialized = max(0, got)
        }
        guard got == count, let after = try? descriptor.status(), FileIdentity(after) == identity else { return nil }
        let file = File(identity: identity, status: status, bytes: bytes, headers: headers(status))
        state.withLock { s in
            if let replaced = s.files.updateValue(file, forKey: relative) { s.bytes -= replaced.bytes.count }
            s.bytes += count
            while s.bytes > byteBudget || s.files.count > entryLimit {
                // Any other entry (the dictionary's first, in hash order): a bound, not a policy.
                guard let victim = s.files.first(where: { $0.key != relative }) else { break }
                s.files[victim.key] = nil
                s.bytes -= victim.value.bytes.count
            }
        }
        return file
    }

    /// How many files and bytes are kept (for tests).
    var kept: (files: Int, bytes: Int) { state.withLock { ($0.files.count, $0.bytes) } }
}
