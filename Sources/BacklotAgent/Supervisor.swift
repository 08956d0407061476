import BacklotBasics
import BacklotContainer
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Starts the agent's children (extension calls, background launches of the app) so that a crash
/// of the agent leaves nothing unsupervised: each child leads a process group of its own
/// (``ChildProcess``), recorded in `agent.sqlite` *before* it runs, with a token in its
/// environment that its descendants inherit; the next agent ends whatever is left of a recorded
/// group (``endLeftovers(store:containerPath:log:)``).
enum Supervisor {
    /// The environment variable that marks the agent's children and their descendants.
    static let tokenVariable = "BACKLOT_AGENT_CHILD"

    /// Starts `executable` held, records its process group, then lets it run.
    static func start(
        executable: String, arguments: [String], environment: [String: String], captureOutput: Bool,
        what: String, event: Int64?, store: AgentStore
    ) throws -> ChildProcess {
        let token = UUID().uuidString.lowercased()
        var env = environment
        env[tokenVariable] = token
        let child = try ChildProcess.start(
            executable: executable, arguments: arguments, environment: env, captureOutput: captureOutput)
        do {
            try store.recordChild(
                AgentStore.Child(pgid: child.pid, token: token, what: what, event: event, started: Date()))
        } catch {
            child.signalGroup(SIGKILL)  // never run a child the next agent could not find
            _ = child.wait(until: nil)
            throw error
        }
        do { try child.release() } catch {
            try? store.removeChild(child.pid)
            throw error
        }
        return child
    }

    /// The child was reaped and its group killed: forget it.
    static func finished(_ child: ChildProcess, store: AgentStore) {
        try? store.removeChild(child.pid)
    }

    /// At start: kills what a previous agent left running (every process of a recorded group that
    /// carries its token), forgets the records and removes the extension calls' leftovers
    /// (`CONTAINER/.extension-calls`).
    /// - Returns: the records of the children that were found still running.
    @discardableResult
    static func endLeftovers(store: AgentStore, containerPath: String, log: (String) -> Void) -> [AgentStore.Child] {
        var ended: [AgentStore.Child] = []
        for child in (try? store.children()) ?? [] {
            var members = ChildProcess.members(ofGroup: child.pgid, environment: tokenVariable, value: child.token)
            if !members.isEmpty {
                ended.append(child)
                log(
                    "agent: ended \(child.what) (process group \(child.pgid), \(members.count) process\(members.count == 1 ? "" : "es")) that the previous agent left running"
                )
            }
            // SIGKILL each marked process until none is left (a member may fork meanwhile).
            for _ in 0..<50 where !members.isEmpty {
                for pid in members { kill(pid, SIGKILL) }
                usleep(10_000)
                members = ChildProcess.members(ofGroup: child.pgid, environment: tokenVariable, value: child.token)
            }
            try? store.removeChild(child.pgid)
        }
        ContainerLayout(root: containerPath).removeExtensionCallsFolder()
        return ended
    }
}
