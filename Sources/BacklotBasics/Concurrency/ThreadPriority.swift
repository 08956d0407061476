import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Runs work on a thread of its own at a lower scheduling priority than its caller's, and waits
/// for it: long work that must leave the cores to short work whenever both are ready (the fleet
/// simulator's installs, which on real devices would never delay another device's catalog check).
///
/// On Linux the nice value is per thread (`setpriority(PRIO_PROCESS, 0, …)` sets the caller's); a thread may
/// always lower its own priority and, without `CAP_SYS_NICE`, never raise it again, so the work
/// runs on a new thread rather than lowering the caller's. Elsewhere the work runs at the caller's
/// priority.
///
/// ```swift
/// let result = try ThreadPriority.runLowered(by: 10) { try install() }
/// ```
public enum ThreadPriority {
    /// Runs `body` on a new thread whose nice value is the caller's plus `steps` (at most 19), and
    /// returns what it returns or throws what it throws. A priority that cannot be lowered (a
    /// system without per-thread nice values) leaves `body` at the caller's.
    public static func runLowered<T: Sendable>(
        by steps: Int32, _ body: @escaping @Sendable () throws -> T
    ) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox<T>()
        let thread = Thread {
            defer { done.signal() }
            lowerCurrentThread(by: steps)
            box.set(Result { try body() })
        }
        thread.start()
        done.wait()
        guard let result = box.take() else {
            throw BacklotError(.io, "the lowered thread ended without a result")
        }
        return try result.get()
    }

    /// Lowers the calling thread's priority by `steps` nice values (to 19 at most); false when the
    /// system refused.
    @discardableResult
    public static func lowerCurrentThread(by steps: Int32) -> Bool {
        #if os(Linux)
        guard let current = currentNiceValue else { return false }
        // Nice values span 40 steps (-20…19): a larger request is clamped before it is added.
        let lowered = min(19, current + min(max(0, steps), 39))
        return setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, lowered) == 0
        #else
        return false
        #endif
    }

    /// The calling thread's nice value (-20…19, higher runs later), nil where it cannot be read.
    public static var currentNiceValue: Int32? {
        #if os(Linux)
        // `who` 0 is the calling thread: Linux keeps the nice value per thread (setpriority(2)).
        errno = 0
        let value = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        return errno == 0 ? value : nil
        #else
        return nil
        #endif
    }
}

/// One result handed from the thread that makes it to the one that waits for it (the semaphore
/// orders the two accesses; the lock makes that visible to the checker).
private final class ResultBox<T: Sendable>: Sendable {
    private let value = Mutex<Result<T, any Error>?>(nil)
    func set(_ result: Result<T, any Error>) { value.withLock { $0 = result } }
    func take() -> Result<T, any Error>? { value.withLock { $0 } }
}
