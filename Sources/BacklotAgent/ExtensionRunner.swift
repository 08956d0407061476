import BacklotBasics
import BacklotClient
import BacklotContainer
import BacklotExtension
import BacklotJSON
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

extension BacklotError.Code {
    /// The downloader extension failed: it crashed, overran its time limit, or answered nonsense.
    public static let extensionFailed = BacklotError.Code("extensionFailed", isInvalidInput: false)
    /// The extension's daily runtime budget is used up; it runs again tomorrow (or with `simulate`).
    public static let budgetExhausted = BacklotError.Code("budgetExhausted", isInvalidInput: false)
}

/// Runs one call of the downloader extension as a process: under a time limit (its whole process
/// group is killed with SIGKILL when it overruns) and a daily runtime budget kept in the agent's
/// store. Both are measured on the monotonic clock (``ChildProcess``): a step of the wall clock
/// neither stretches a limit nor charges or credits the budget; the wall clock only names the
/// UTC day a call is charged to.
struct ExtensionRunner: Sendable {
    let executable: String
    let containerPath: String
    let store: AgentStore
    let timeLimit: TimeInterval
    let dailyBudget: TimeInterval
    let log: @Sendable (String) -> Void
    /// The agent is stopping: a running call is ended (SIGKILL) at once.
    var isStopping: @Sendable () -> Bool = { false }
    /// The device's preferred languages, given to the extension as `LANGUAGE` (what
    /// ``PreferredLanguages/current(environment:)`` reads), so that it resolves the languages the agent does.
    var preferredLanguages: @Sendable () -> [String] = { [] }
    /// The language the agent resolved for localized packs, given as `BACKLOT_RESOLVED_LANGUAGE`
    /// (what ``AssetPackManifest/init(contentsOf:appGroupID:)`` takes first).
    var resolvedLanguage: @Sendable () -> String? = { nil }
    /// One call at a time (shared by the copies of this runner), so that calls never overlap and
    /// the daily budget is counted exactly.
    let gate = ExtensionGate()
    /// What is kept of the extension's standard output and error: the last 1 MiB.
    static let outputLimit = 1 << 20

    /// What remains of today's budget.
    func remainingBudget(now: Date = Date()) -> TimeInterval {
        max(0, dailyBudget - ((try? store.extensionRuntime(on: now)) ?? 0))
    }

    /// - Parameter event: the event the call is made for (recorded with its process group).
    /// - Throws: ``BacklotError/Code/budgetExhausted`` before starting when the budget is used up
    ///   (unless `bypassBudget`); ``BacklotError/Code/extensionFailed`` when it crashes, overruns or answers badly.
    func call(_ call: ExtensionCall, bypassBudget: Bool, event: Int64? = nil) throws -> ExtensionReply {
        try gate.oneAtATime { try callAlone(call, bypassBudget: bypassBudget, event: event) }
    }

    /// One call, while no other runs.
    private func callAlone(_ call: ExtensionCall, bypassBudget: Bool, event: Int64?) throws -> ExtensionReply {
        if isStopping() {
            throw BacklotError(
                .cancelled, "the extension's \(call.name) call was not started: the agent is stopping",
                context: executable)
        }
        let day = Date()  // the calendar day the call is charged to
        var limit = timeLimit
        if !bypassBudget {
            let left = remainingBudget(now: day)
            guard left >= 1 else {
                throw BacklotError(
                    .budgetExhausted,
                    "the extension has used its \(CheckedInteger.secondsText(dailyBudget)) s of runtime for today",
                    context: executable,
                    hint: "it runs again tomorrow; backlot simulate bypasses the budget")
            }
            limit = min(limit, left)
        }
        // Made, written, read and removed through descriptors of the folders: the app can swap
        // any of them for a link at any time, which is then never followed.
        let calls = try ContainerLayout(root: containerPath).openExtensionCallsFolder()
        let name = UUID().uuidString.lowercased()
        // Private (0700): a challenge's answer holds a password.
        let dir = try calls.makeFolder(name, mode: 0o700)
        defer { calls.removeTree(name) }
        let callPath = try dir.createFile("call.json", contents: try call.encoded(), mode: 0o600)
        let replyPath = dir.path + "/reply.json"

        var env = ProcessInfo.processInfo.environment
        env["BACKLOT_CONTAINER"] = containerPath
        let languages = preferredLanguages()
        if !languages.isEmpty { env["LANGUAGE"] = languages.joined(separator: ":") }
        env[BacklotClient.AssetPackManifest.resolvedLanguageEnvironmentKey] = resolvedLanguage()
        let child: ChildProcess
        do {
            child = try Supervisor.start(
                executable: executable, arguments: ["--backlot-extension-call", callPath, replyPath], environment: env,
                captureOutput: true, what: "extension:\(call.name)", event: event, store: store)
        } catch {
            throw BacklotError(.extensionFailed, "the extension could not be started: \(error)", context: executable)
        }
        let outcome = child.wait(
            until: child.started + .milliseconds(Int64((limit * 1000).rounded(.up))), keepingLast: Self.outputLimit,
            isCancelled: isStopping)
        Supervisor.finished(child, store: store)
        let elapsed = max(0, outcome.elapsed.inSeconds)
        try? store.addExtensionRuntime(elapsed, on: day)
        // What it printed (the last 1 MiB), 50 lines at most, into the agent's log.
        if outcome.outputTruncated {
            log(
                "extension: printed \(outcome.outputBytes) bytes; only the last \(Self.outputLimit >> 20) MiB were kept"
            )
        }
        let said = String(decoding: outcome.output, as: UTF8.self)
        for line in said.split(separator: "\n").prefix(50) { log("extension: \(line.prefix(1000))") }
        if outcome.cancelled {
            throw BacklotError(
                .cancelled, "the extension's \(call.name) call was ended: the agent is stopping", context: executable)
        }
        if outcome.timedOut {
            throw BacklotError(
                .extensionFailed,
                "the extension's \(call.name) call ran past its limit of \(CheckedInteger.secondsText(limit)) s and was killed",
                context: executable,
                hint: bypassBudget || limit >= timeLimit
                    ? "return sooner; raise BacklotExtensionTimeLimit if the work needs it"
                    : "today's runtime budget ran out")
        }
        guard outcome.succeeded else {
            let how =
                outcome.signal.map { "was killed by signal \($0)" }
                ?? "exited with status \(outcome.exitStatus.map(String.init) ?? "unknown")"
            throw BacklotError(.extensionFailed, "the extension's \(call.name) call \(how)", context: executable)
        }
        // The extension wrote it: a link is not followed, and only a regular file is read (a FIFO
        // would hold the agent, and every extension call after it, for as long as nobody writes).
        guard let bytes = try? dir.readRegularFile("reply.json", atMost: 16 << 20, what: "the extension's answer")
        else {
            throw BacklotError(
                .extensionFailed,
                "the extension's \(call.name) call wrote no answer (or one over 16 MiB, or not a regular file)",
                context: executable,
                hint: "an extension's main must be DownloaderExtension.main() (use @main on the struct)")
        }
        do {
            return try ExtensionReply(decoding: bytes, source: "the extension's answer")
        } catch {
            throw BacklotError(.extensionFailed, "the extension's answer is not valid: \(error)", context: executable)
        }
    }
}

/// Keeps extension calls one at a time.
final class ExtensionGate: Sendable {
    private let lock = Mutex<Void>(())

    func oneAtATime<T>(_ body: () throws -> T) throws -> T {
        var result: Result<T, any Error>?
        lock.withLock { _ in result = Result { try body() } }
        return try result!.get()
    }
}
