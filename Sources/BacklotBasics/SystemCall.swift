#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Helpers that turn a failed system call into a ``BacklotError`` naming the path and the operation.
public enum SystemCall {
    /// The text of an `errno` value.
    public static func describe(_ err: Int32) -> String {
        String(cString: strerror(err))
    }

    /// A ``BacklotError`` for the current `errno`.
    public static func error(_ operation: String, path: String, errno err: Int32 = errno) -> BacklotError {
        let hint: String? = switch err {
        case ENOSPC: "free some disk space and try again"
        case EACCES, EPERM: "check the permissions of this path"
        case ENOENT: "check that the path exists"
        default: nil
        }
        return BacklotError(.io, "\(operation) failed: \(describe(err))", context: path, hint: hint)
    }

    /// Retries `body` while it fails with `EINTR`; throws for any other failure.
    @discardableResult
    public static func retrying<T: BinaryInteger>(
        _ operation: String, path: String, _ body: () -> T
    ) throws -> T {
        while true {
            let result = body()
            if result >= 0 { return result }
            if errno == EINTR { continue }
            throw error(operation, path: path)
        }
    }
}
