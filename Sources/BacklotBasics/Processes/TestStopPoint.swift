import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Named points where a test stops a real process, to prove that a step survives a crash or a
/// normal stop there. Armed only by the environment: `BACKLOT_TEST_STOP_AT=NAME:KILL` makes the
/// process SIGKILL itself when it reaches `NAME`; `NAME:TERM` sends it SIGTERM and parks the
/// thread that reached the point, so the process stops normally while that step never finishes
/// (as when `systemctl stop` ends a process whose thread waits on a lock); `NAME:STOP` sends it
/// SIGSTOP, so that a test can change the world (stop a server) before it sends SIGCONT. Without the variable
/// (every real run) ``reach(_:)`` does nothing.
///
/// Points: the agent's hand-over of URL download outcomes (`handover.afterRecord`, `afterRename`,
/// `underLock`, `afterPost`, `beforeExtension`, `afterExtension`, `extensionAnswered`) and the
/// server's releases, publication and processing (`release.committed`, `publish.beforeCatalog`,
/// `publish.afterCatalog`, `processing.beforeStore`), and an install's (`install.afterPlan`: the
/// header and index read; `peers.afterRecord`: the first chunks from LAN peers recorded).
///
/// ```swift
/// TestStopPoint.reach("handover.afterRename")
/// ```
public enum TestStopPoint {
    /// The armed point and how it stops, read once.
    static let armed: (name: String, signal: Int32)? = {
        guard let value = ProcessInfo.processInfo.environment["BACKLOT_TEST_STOP_AT"], !value.isEmpty else {
            return nil
        }
        let parts = value.split(separator: ":", maxSplits: 1).map(String.init)
        let how = parts.count > 1 ? parts[1] : "KILL"
        return (parts[0], how == "TERM" ? SIGTERM : how == "STOP" ? SIGSTOP : SIGKILL)
    }()

    /// Stops the process here when this point is armed.
    /// - Parameter parksOnTerm: with `TERM`, park this thread (false where the process's own stop
    ///   waits for this thread to finish, as it waits for an extension call: the step goes on, as
    ///   it would after a real SIGTERM at that moment).
    ///   - defaultTerm: with `TERM`, let SIGTERM end the process (a child of the agent may inherit
    ///     SIGTERM blocked by the thread that started it).
    public static func reach(_ name: String, parksOnTerm: Bool = true, defaultTerm: Bool = false) {
        guard let armed, armed.name == name else { return }
        FileHandle.standardError.write(Data("stop point \(name) reached\n".utf8))
        if armed.signal == SIGKILL { raise(SIGKILL) }
        if armed.signal == SIGSTOP {
            raise(SIGSTOP)  // the test sends SIGCONT; the step goes on
            return
        }
        if defaultTerm {
            signal(SIGTERM, SIG_DFL)
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, SIGTERM)
            sigprocmask(SIG_UNBLOCK, &set, nil)  // a child may inherit it blocked, too
        }
        kill(getpid(), SIGTERM)
        guard parksOnTerm else { return }
        while true { pause() }  // this step never finishes; the process exits through its SIGTERM handler
    }
}
