import BacklotBasics
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Named points in the server's work where a crash test makes the process kill itself with
/// SIGKILL — as a power cut would, with nothing flushed or cleaned up — so that tests can check
/// that every crash point is repaired at the next start.
///
/// Armed only by the environment of a test: `BACKLOT_TEST_KILL_AT=NAME` (the first time NAME is
/// reached) or `NAME:N` (the N-th time). Unarmed, ``reach(_:)`` is one comparison.
///
/// Points: `release.committed` (a release is in the database, its catalog not yet built),
/// `publish.beforeCatalog` (archives linked, catalog not yet written), `publish.afterCatalog`.
public enum FaultPoint {
    /// The armed point's name and how many more times it is passed before the kill.
    static let armed: (name: String, count: Int)? = {
        guard let text = ProcessInfo.processInfo.environment["BACKLOT_TEST_KILL_AT"], !text.isEmpty else { return nil }
        let parts = text.split(separator: ":", maxSplits: 1)
        let count = parts.count == 2 ? (CheckedInteger.parse(parts[1], as: Int.self) ?? 1) : 1
        return (String(parts[0]), max(1, count))
    }()
    static let passes = Atomic<Int>(0)

    /// Kills the process here if this is the armed point's N-th time.
    public static func reach(_ name: String) {
        guard let armed, armed.name == name else { return }
        if passes.wrappingAdd(1, ordering: .relaxed).newValue == armed.count {
            kill(getpid(), SIGKILL)
        }
    }
}
