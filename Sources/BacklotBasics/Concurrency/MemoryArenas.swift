import CLinuxSupport
import Synchronization

/// The C library's memory arenas. glibc's malloc gives a thread that allocates while the other
/// arenas are busy an arena of its own (up to eight per core), and memory freed into an arena stays
/// resident for its next use: a device's install runs a dozen threads (downloads, file writes,
/// the progress records), and its peak resident memory carried about 8 MiB of idle arenas.
/// Capped at two, installing a 4 GiB pack peaked at 58 MiB instead of 66, in no more time
/// (docs/benchmarks.md, "The client against curl and aria2c").
///
/// Called once, first thing, by a process that wants it (the `backlot` executable for its device
/// commands); a library never calls it for its host.
///
/// Large blocks are the other half: glibc gives a block of 128 KiB or more a mapping of its own,
/// but once such a block is freed it raises that threshold to the block's size (up to 32 MiB), and
/// the large blocks that follow come from the heap, where freed memory stays resident. A cold
/// install of 200,000 small files decodes an index of about 40 MB in arrays of 10–16 MB, frees the
/// index's bytes, then allocates again: it peaked at 131 MiB, 114 MiB with the threshold fixed at
/// 1 MiB (docs/benchmarks.md, "Peak memory at 200,000 small files").
///
/// ```swift
/// MemoryArenas.limit(to: 2)
/// MemoryArenas.mapBlocks(ofAtLeast: 1 << 20)
/// ```
public enum MemoryArenas {
    /// What the device's commands (`fetch`, `agent`) run first: two arenas, and blocks of 1 MiB or
    /// more mapped on their own. A device's memory is the device's.
    public static func keepSmallForDevice() {
        keptSmall.store(true, ordering: .relaxed)
        limit(to: 2)
        mapBlocks(ofAtLeast: 1 << 20)
    }

    /// Whether the process asked for ``keepSmallForDevice()``.
    private static let keptSmall = Atomic(false)

    /// In a process that asked for ``keepSmallForDevice()``, gives the kernel back what the arenas
    /// hold freed (`malloc_trim`): called between the phases of work whose memory the next one no
    /// longer needs (an install's download, before its commit). Nothing in any other process: a
    /// library does not decide this for its host.
    /// - Returns: whether memory was given back.
    @discardableResult
    public static func giveBackFreedMemory() -> Bool {
        keptSmall.load(ordering: .relaxed) && clinux_malloc_trim() == 1
    }

    /// Caps the number of malloc arenas at `count` (at least 1). Call before any thread starts.
    /// - Returns: false when the C library refused (or has no such setting).
    @discardableResult
    public static func limit(to count: Int) -> Bool {
        clinux_limit_malloc_arenas(Int32(clamping: max(1, count))) == 1
    }

    /// Gives every block of at least `bytes` bytes (clamped to 4 KiB…32 MiB) a mapping of its own,
    /// returned to the kernel when it is freed, and keeps that threshold fixed. Call before any
    /// thread starts. Code that allocates and frees such blocks in a loop should reuse one buffer
    /// instead: each new mapping costs its page faults.
    /// - Returns: false when the C library refused (or has no such setting).
    @discardableResult
    public static func mapBlocks(ofAtLeast bytes: Int) -> Bool {
        clinux_malloc_map_blocks_from(Int32(min(max(bytes, 4096), 32 << 20))) == 1
    }

    /// How many blocks malloc holds as mappings of their own right now (``mapBlocks(ofAtLeast:)``),
    /// for tests and diagnostics.
    public static var mappedBlocks: Int { clinux_malloc_mapped_blocks() }

    /// How many arenas malloc has made so far (from its own report, `malloc_info`), nil when it
    /// cannot say: what ``limit(to:)`` bounds, for tests and diagnostics.
    public static var count: Int? {
        let n = clinux_malloc_arena_count()
        return n < 0 ? nil : Int(n)
    }
}
