import BacklotBasics
import BacklotExtension
import BacklotJSON
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension BacklotError.Code {
    /// The downloader extension failed: it crashed, overran its time limit, or answered nonsense.
    public static let extensionFailed = BacklotError.Code("extensionFailed", isInvalidInput: false)
    /// The extension's daily runtime budget is used up; it runs again tomorrow (or with `simulate`).
    public static let budgetExhausted = BacklotError.Code("budgetExhausted", isInvalidInput: false)
}

/// Runs one call of the downloader extension as a process: under a wall-clock limit (killed with
/// SIGKILL when it overruns) and a daily runtime budget kept in the agent's store.
struct ExtensionRunner: Sendable {
    let executable: String
    let containerPath: String
    let store: AgentStore
    let timeLimit: TimeInterval
    let dailyBudget: TimeInterval
    let log: @Sendable (String) -> Void
    /// The agent is stopping: a running call is ended (SIGKILL) at once.
    var isStopping: @Sendable () -> Bool = { false }
    /// One call at a time (shared by the copies of this runner), so that calls never overlap and
    /// the daily budget is counted exactly.
    let gate = ExtensionGate()

    /// What remains of today's budget.
    func remainingBudget(now: Date = Date()) -> TimeInterval {
        max(0, dailyBudget - ((try? store.extensionRuntime(on: now)) ?? 0))
    }

    /// - Throws: ``BacklotError/Code/budgetExhausted`` before starting when the budget is used up
    ///   (unless `bypassBudget`); ``BacklotError/Code/extensionFailed`` when it crashes, overruns or answers badly.
    func call(_ call: ExtensionCall, bypassBudget: Bool) throws -> ExtensionReply {
        gate.lock.lock()
        defer { gate.lock.unlock() }
        if isStopping() {
            throw BacklotError(.cancelled, "the extension's \(call.name) call was not started: the agent is stopping", context: executable)
        }
        let started = Date()
        var limit = timeLimit
        if !bypassBudget {
            let left = remainingBudget(now: started)
            guard left >= 1 else {
                throw BacklotError(.budgetExhausted, "the extension has used its \(CheckedInteger.secondsText(dailyBudget)) s of runtime for today", context: executable,
                                   hint: "it runs again tomorrow; backlot simulate bypasses the budget")
            }
            limit = min(limit, left)
        }
        let dir = containerPath + "/.extension-calls/" + UUID().uuidString.lowercased()
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { FileSystem.removeTree(dir) }
        let callPath = dir + "/call.json", replyPath = dir + "/reply.json", logPath = dir + "/output.txt"
        try Data(call.json.serialized().utf8).write(to: URL(fileURLWithPath: callPath))
        FileManager.default.createFile(atPath: logPath, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        defer { try? output.close() }

        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = ["--backlot-extension-call", callPath, replyPath]
        var env = ProcessInfo.processInfo.environment
        env["BACKLOT_CONTAINER"] = containerPath
        p.environment = env
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = output
        p.standardError = output
        do { try p.run() } catch {
            throw BacklotError(.extensionFailed, "the extension could not be started: \(error)", context: executable)
        }
        var killed = false, stopped = false
        while p.isRunning {
            if Date().timeIntervalSince(started) >= limit {
                kill(p.processIdentifier, SIGKILL)
                killed = true
                break
            }
            if isStopping() {
                kill(p.processIdentifier, SIGKILL)
                stopped = true
                break
            }
            usleep(10_000)
        }
        p.waitUntilExit()
        let elapsed = Date().timeIntervalSince(started)
        try? store.addExtensionRuntime(elapsed, on: started)
        // The first 64 KiB of what it printed, 50 lines at most, into the agent's log.
        let said = (try? FileDescriptor.openForReading(logPath)).map { fd -> String in
            defer { fd.close() }
            return String(decoding: (try? fd.read(count: Int(min(64 << 10, (try? fd.size()) ?? 0)), at: 0)) ?? [], as: UTF8.self)
        } ?? ""
        for line in said.split(separator: "\n").prefix(50) { log("extension: \(line)") }
        if stopped {
            throw BacklotError(.cancelled, "the extension's \(call.name) call was ended: the agent is stopping", context: executable)
        }
        if killed {
            throw BacklotError(.extensionFailed, "the extension's \(call.name) call ran past its limit of \(CheckedInteger.secondsText(limit)) s and was killed", context: executable,
                               hint: bypassBudget || limit >= timeLimit ? "return sooner; raise BacklotExtensionTimeLimit if the work needs it" : "today's runtime budget ran out")
        }
        guard p.terminationReason == .exit, p.terminationStatus == 0 else {
            let how = p.terminationReason == .uncaughtSignal ? "was killed by signal \(p.terminationStatus)" : "exited with status \(p.terminationStatus)"
            throw BacklotError(.extensionFailed, "the extension's \(call.name) call \(how)", context: executable)
        }
        guard let bytes = try? FileDescriptor.readWholeFile(replyPath, atMost: 16 << 20, what: "the extension's answer") else {
            throw BacklotError(.extensionFailed, "the extension's \(call.name) call wrote no answer (or one over 16 MiB)", context: executable,
                               hint: "an extension's main must be DownloaderExtension.main() (use @main on the struct)")
        }
        do {
            return try ExtensionReply(json: try JSONReader(source: replyPath).read(bytes).root, source: "the extension's answer")
        } catch {
            throw BacklotError(.extensionFailed, "the extension's answer is not valid: \(error)", context: executable)
        }
    }
}

/// The lock that keeps extension calls one at a time.
final class ExtensionGate: @unchecked Sendable {
    let lock = NSLock()
}
