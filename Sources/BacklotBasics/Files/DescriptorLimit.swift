#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's limit on open file descriptors (`RLIMIT_NOFILE`), which bounds how many
/// connections a server can hold: one descriptor each, plus the files it sends.
///
/// ```swift
/// let limit = try DescriptorLimit.raiseToHardLimit()
/// if limit.soft < 10_240 { print("only \(limit.soft) descriptors: raise the hard limit (ulimit -Hn)") }
/// ```
public struct DescriptorLimit: Sendable, Equatable {
    /// The limit in force.
    public let soft: UInt64
    /// The most the soft limit can be raised to without privileges.
    public let hard: UInt64

    /// The limit as it is now.
    /// - Throws: ``BacklotError/Code/io`` if `getrlimit` fails.
    public static func current() throws -> DescriptorLimit {
        var limit = rlimit()
        guard getrlimit(resourceNumber, &limit) == 0 else {
            throw SystemCall.error("getrlimit(RLIMIT_NOFILE)", path: "this process")
        }
        return DescriptorLimit(soft: UInt64(limit.rlim_cur), hard: UInt64(limit.rlim_max))
    }

    /// Raises the soft limit to the hard one (a server at start), and returns the limit then in
    /// force. A soft limit already at the hard one is left alone; an unlimited hard limit
    /// (`RLIM_INFINITY`) is taken as the kernel's `nr_open` ceiling, 1,048,576 by default.
    /// - Throws: ``BacklotError/Code/io`` if `getrlimit` or `setrlimit` fails.
    @discardableResult
    public static func raiseToHardLimit() throws -> DescriptorLimit {
        var limit = rlimit()
        guard getrlimit(resourceNumber, &limit) == 0 else {
            throw SystemCall.error("getrlimit(RLIMIT_NOFILE)", path: "this process")
        }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max == rlim_t.max ? 1 << 20 : limit.rlim_max  // RLIM_INFINITY
            guard setrlimit(resourceNumber, &raised) == 0 else {
                throw SystemCall.error("setrlimit(RLIMIT_NOFILE, \(raised.rlim_cur))", path: "this process")
            }
        }
        return try current()
    }

    #if canImport(Glibc)
    private static var resourceNumber: __rlimit_resource_t { __rlimit_resource_t(RLIMIT_NOFILE.rawValue) }
    #else
    private static var resourceNumber: Int32 { RLIMIT_NOFILE }
    #endif
}
