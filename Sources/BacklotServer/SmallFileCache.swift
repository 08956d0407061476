import BacklotBasics
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc  // `stat`
#endif

/// The published tree's small files (catalogs, key lists, small packs) kept in memory with the
/// headers of their answer, so that the request a device makes most often neither reads the
/// file nor formats a header again.
///
/// A kept copy is used only while both hold:
/// - **it is still the file the path names**: every use finds the file again strictly beneath the
///   root and through no link, as the first open did (``DirectoryHandle/statusBeneath(_:)``), and
///   compares its device, inode, size, mode, and modification and change times with the copy's.
///   A file renamed over (the tree's writers replace files so), rewritten, truncated, `chmod`ed or
///   removed, or a path that now passes through a link, is read again or is a 404 on the very
///   next request;
/// - **it was read less than ``maximumAge`` ago** (1 s by default): a change that leaves all of
///   those fields alone (a store through a shared mapping to a page already dirty, a network file
///   system's cached attributes) is seen within that time, and each hot file is read once a
///   second instead of at every request.
///
/// **A file changed less than ``settleTime`` ago is not kept** (1 s by default), as git does with
/// an index entry whose file is "racily clean": a file's times move in steps of the kernel's
/// clock tick, and a write in the same tick may leave them as they were, or give a new file that
/// reuses the inode number and size the same ones. A file last changed a second before it was
/// read cannot be confused with a later version. Without openat2 nothing is kept.
///
/// Bounded: files of 1 to ``fileLimit`` bytes, ``byteBudget`` bytes and ``entryLimit`` files in
/// all; past that, others are evicted for the one added. The kept headers are those of the tree
/// that made the cache: one cache serves one ``StaticTree``.
///
/// ```swift
/// let cache = SmallFileCache()
/// if let file = cache.file(at: "v1/keys/root.json", beneath: root) { send(file.bytes) }
/// ```
final class SmallFileCache: Sendable {
    /// What makes a kept copy still the file: a write, truncation, `chmod`, rename over it or
    /// removal changes one of these (the change time at least, unless within one clock tick).
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

        /// The change time, since 1970.
        var changedAt: Duration { .seconds(changed) + .nanoseconds(changedNanos) }
    }

    /// A kept file: its bytes, the status it was read with, and what its answers say of it.
    struct File: Sendable {
        let status: stat
        let bytes: [UInt8]
        /// What its answers say of it (validators, cache rule, type), made once.
        let headers: StaticTree.FileHeaders
        /// When it was read, since 1970.
        let readAt: Duration

        var identity: FileIdentity { FileIdentity(status) }
    }

    /// Files larger than this are not kept (by default the server's own limit for answering
    /// with the head, 64 KiB).
    let fileLimit: Int
    /// The most bytes kept in all (16 MiB by default).
    let byteBudget: Int
    /// The most files kept (4,096 by default).
    let entryLimit: Int
    /// How long before it is read a file must have last changed to be kept.
    let settleTime: Duration
    /// How long a kept copy is used before the file is read again.
    let maximumAge: Duration

    init(
        fileLimit: Int = 64 << 10, byteBudget: Int = 16 << 20, entryLimit: Int = 4096,
        settleTime: Duration = .seconds(1), maximumAge: Duration = .seconds(1)
    ) {
        self.fileLimit = fileLimit
        self.byteBudget = byteBudget
        self.entryLimit = entryLimit
        self.settleTime = settleTime
        self.maximumAge = maximumAge
    }

    private struct State {
        var files: [BytePath.Key: File] = [:]
        var bytes = 0
    }
    private let state = Mutex(State())

    /// The kept file at `relative`, if it is still the file there and young enough; an entry that
    /// is not is dropped. `now` is the time since 1970.
    func file(at relative: String, beneath root: DirectoryHandle, now: Duration = SmallFileCache.now()) -> File? {
        let key = BytePath.Key(relative)
        guard let kept = state.withLock({ $0.files[key] }) else { return nil }
        guard now - kept.readAt < maximumAge, let current = root.statusBeneath(relative),
            FileIdentity(current) == kept.identity
        else {
            state.withLock { s in
                if let entry = s.files[key], entry.readAt == kept.readAt, entry.identity == kept.identity {
                    s.files[key] = nil
                    s.bytes -= entry.bytes.count
                }
            }
            return nil
        }
        return kept
    }

    /// Reads the file just opened at `relative` (`fd`, with `status`) and keeps it when it is
    /// small and settled, is still what the path names, and did not change while it was read; nil
    /// otherwise (the caller answers from `fd`, which stays the caller's). `headers` makes what
    /// its answers say of it; `now` (the time since 1970) is taken before the read.
    func admit(
        _ relative: String, beneath root: DirectoryHandle, fd: Int32, status: stat,
        now: Duration = SmallFileCache.now(),
        headers: (stat) -> StaticTree.FileHeaders
    ) -> File? {
        let identity = FileIdentity(status)
        guard status.st_size > 0, status.st_size <= fileLimit, identity.changedAt <= now - settleTime,
            let named = root.statusBeneath(relative), FileIdentity(named) == identity
        else { return nil }
        let count = Int(status.st_size)
        let descriptor = FileDescriptor(rawValue: fd, path: relative)
        var got = -1
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            got = (try? descriptor.read(into: UnsafeMutableRawBufferPointer(buffer), at: 0)) ?? -1
            initialized = max(0, got)
        }
        guard got == count, let after = try? descriptor.status(), FileIdentity(after) == identity else { return nil }
        let file = File(status: status, bytes: bytes, headers: headers(status), readAt: now)
        let key = BytePath.Key(relative)
        state.withLock { s in
            if let replaced = s.files.updateValue(file, forKey: key) { s.bytes -= replaced.bytes.count }
            s.bytes += count
            while s.bytes > byteBudget || s.files.count > entryLimit {
                // Any other entry (the dictionary's first, in hash order): a bound, not a policy.
                guard let victim = s.files.first(where: { $0.key != key }) else { break }
                s.files[victim.key] = nil
                s.bytes -= victim.value.bytes.count
            }
        }
        return file
    }

    /// How many files and bytes are kept (for tests).
    var kept: (files: Int, bytes: Int) { state.withLock { ($0.files.count, $0.bytes) } }

    /// The time now, since 1970 (what file times are counted from).
    static func now() -> Duration { .seconds(Date().timeIntervalSince1970) }
}
