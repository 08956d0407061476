import BacklotBasics
import BacklotClient
import BacklotContainer
import BacklotHTTPServer
import BacklotRepository
import BacklotStore
import BacklotTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What the tests that kill `backlot fetch` mid-download share: a server with one app, the
/// command run against it, its report, and how far its container got.
protocol FetchProcessSetup {
    var dir: TemporaryDirectory { get }
    var repository: Repository { get }
    var server: HTTPServer { get }
}

extension FetchProcessSetup {
    /// Starts `backlot fetch --json` of app `a`'s internal channel into `container` (its standard
    /// error is the test's, its report on a pipe).
    func fetch(container: String) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ProcessTests.binary)
        p.arguments = [
            "fetch", "--catalog", "http://127.0.0.1:\(server.port)/v1/apps/a/internal/catalog.json",
            "--trust", repository.directory.publicKeyPath, "--container", dir.at(container), "--json",
        ]
        p.standardOutput = Pipe()
        p.standardError = FileHandle(forWritingAtPath: "/dev/stderr") ?? FileHandle.nullDevice
        try p.run()
        return p
    }

    /// What the command printed.
    func report(_ p: Process) -> String {
        String(decoding: (p.standardOutput as! Pipe).fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    /// The chunks the container has verified so far (of any release being assembled).
    func doneChunks(_ container: String) -> Int {
        let path = ContainerLayout(root: dir.at(container)).stateDatabase
        guard FileSystem.exists(path), let db = try? Database(path: path) else { return 0 }
        return Int((try? db.read { try $0.query("SELECT COUNT(*) AS n FROM chunks_done") })?.first?["n"]?.int ?? 0)
    }
}

/// The test's stop point inside `backlot fetch`, held by its server: every Range answer waits
/// `delay`, one answer at a time (a slow link: a fetch takes as long whatever number of requests it
/// keeps in flight); once the gate is closed, Range answers past its
/// allowance are held (parked) until it opens again. A fetch killed once its container has
/// recorded chunks and while an answer is parked is certain to be killed between its first
/// recorded progress and its install: never before it began, never after it finished.
final class RangeGate: Sendable {
    private struct State {
        var delayMicroseconds: UInt32 = 0
        var closed = false
        var allowance = 0
        var answered = 0
        var parked = 0
    }
    private let state = Mutex(State())
    /// Taken for the delay: the answers' delays add up rather than overlap.
    private let link = DispatchSemaphore(value: 1)

    /// Called by the server's handler for a Range request, before it answers.
    func pass() {
        let delay = state.withLock { $0.delayMicroseconds }
        if delay > 0 {
            link.wait()
            usleep(delay)
            link.signal()
        }
        let held = state.withLock { s -> Bool in
            if s.closed && s.allowance == 0 {
                s.parked += 1
                return true
            }
            if s.closed { s.allowance -= 1 }
            s.answered += 1
            return false
        }
        guard held else { return }
        // Held until the test opens the gate (after its kill), 120 s at most.
        _ = Wait.holds(within: .seconds(120), poll: .milliseconds(5)) { !state.withLock { $0.closed } }
        state.withLock {
            $0.parked -= 1
            $0.answered += 1
        }
    }

    /// Opens the gate (releasing what it holds) and sets the delay of the Range answers to come.
    func open(delayMicroseconds: UInt32 = 0) {
        state.withLock {
            $0.closed = false
            $0.delayMicroseconds = delayMicroseconds
        }
    }

    /// Closes the gate: `allowing` more Range answers pass, the later ones are held.
    func close(allowing: Int = 0) {
        state.withLock {
            $0.closed = true
            $0.allowance = allowing
        }
    }

    /// Range requests held at the gate now.
    var parked: Int { state.withLock { $0.parked } }
    /// Range requests answered (or let through) so far.
    var answered: Int { state.withLock { $0.answered } }
}

extension FetchProcessSetup {
    /// Starts a fetch into `container` and kills it (SIGKILL) between recorded chunks and its
    /// install: the gate delays each Range answer by `delay` µs, is closed once the container has
    /// recorded chunks `records` times (an update records the chunks it reuses first; the
    /// installer records downloaded ones in batches), letting `allowing` more answers through
    /// (with `records`, the moment drawn from a seed), and the kill comes once a Range answer is
    /// held there. Then checks that the kill landed: the process died by SIGKILL and recorded
    /// chunks. Returns the chunks recorded when it died.
    func fetchKilledMidway(
        container: String, gate: RangeGate, delay: UInt32, records: Int = 1, allowing: Int, label: String
    ) throws -> Int {
        let doneBefore = doneChunks(container)
        gate.open(delayMicroseconds: delay)
        let first = try fetch(container: container)
        defer {
            if first.isRunning { kill(first.processIdentifier, SIGKILL) }
            first.waitUntilExit()
            gate.open()
        }
        var seen = doneBefore
        for n in 1...max(1, records) {
            let base = seen
            try Wait.until(
                "\(label): the fetch records chunks a \(n == 1 ? "first" : "\(n)th") time (beyond \(base))",
                timeout: .seconds(120), poll: .milliseconds(5),
                detail: { "chunks recorded \(doneChunks(container)), running \(first.isRunning)" }
            ) {
                seen = doneChunks(container)
                return seen > base || !first.isRunning
            }
            try requireRunning(first, label)
        }
        gate.close(allowing: allowing)
        try Wait.until(
            "\(label): the fetch waits on a Range answer held at the gate", timeout: .seconds(120),
            detail: { "answered \(gate.answered), running \(first.isRunning)" }
        ) { gate.parked > 0 || !first.isRunning }
        try requireRunning(first, label)
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        gate.open()
        #expect(
            first.terminationReason == .uncaughtSignal && first.terminationStatus == SIGKILL,
            "\(label): the fetch did not die by the kill (\(first.terminationReason), \(first.terminationStatus))")
        let recorded = doneChunks(container)
        #expect(recorded > doneBefore, "\(label): the killed fetch left no recorded chunk")
        return recorded
    }

    /// Fails the test when `process` has ended already (the kill would not land mid-run).
    private func requireRunning(_ process: Process, _ label: String) throws {
        guard !process.isRunning else { return }
        process.waitUntilExit()
        throw BacklotError(
            .io,
            "\(label): the fetch ended (status \(process.terminationStatus)) before it could be killed midway: \(report(process))"
        )
    }

    /// The unfinished release folders (`*.partial`) of pack `id` in `container`.
    func partialReleases(_ container: String, pack id: String) -> [String] {
        guard let folder = try? ClientContainer(path: dir.at(container)).packFolder(id) else { return [] }
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter {
            $0.hasSuffix(".partial")
        }
    }
}
