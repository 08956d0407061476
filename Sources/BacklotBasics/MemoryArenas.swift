import CLinuxSupport

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
/// ```swift
/// MemoryArenas.limit(to: 2)
/// ```
public enum MemoryArenas {
    /// Caps the number of malloc arenas at `count` (at least 1). Call before any thread starts.
    /// - Returns: false when the C library refused (or has no such setting).
    @discardableResult
    public static func limit(to count: Int) -> Bool {
        clinux_limit_malloc_arenas(Int32(clamping: max(1, count))) == 1
    }

    /// How many arenas malloc has made so far (from its own report, `malloc_info`), nil when it
    /// cannot say: what ``limit(to:)`` bounds, for tests and diagnostics.
    public static var count: Int? {
        let n = clinux_malloc_arena_count()
        return n < 0 ? nil : Int(n)
    }
}
