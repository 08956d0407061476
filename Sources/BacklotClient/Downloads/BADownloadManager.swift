import BacklotBasics
import BacklotInfoPlist
import Foundation
import Synchronization

/// Apple's 2022 download manager (`BADownloadManager`), over ``DownloadManager``: URL downloads of
/// one container, shared by the app, the downloader extension and the background agent.
///
/// ```swift
/// let manager = BADownloadManager.shared
/// manager.delegate = downloads                      // weak; the app now receives the outcomes
/// let download = BAURLDownload(
///     identifier: "intro", request: URLRequest(url: URL(string: "https://cdn.example.com/intro.m4v")!),
///     essential: false, fileSize: 8_000_000, applicationGroupIdentifier: "group.com.example.game", priority: .default)
/// manager.withExclusiveControl { acquired, error in
///     guard acquired else { return }
///     if (try? manager.fetchCurrentDownloads())?.contains(where: { $0.identifier == "intro" }) != true {
///         try? manager.scheduleDownload(download)
///     }
/// }
/// ```
///
/// Callbacks go where Apple sends them: to the app's ``delegate`` while it has one (the manager
/// listens for the outcomes of downloads the agent ran), else to the downloader extension, which
/// the agent wakes. An outcome of a download this process ran while it had no delegate is kept
/// for the next delegate (this process is the app: there is no extension to wake in it).
public final class BADownloadManager: Sendable {
    /// The Backlot manager underneath (its restrictions, its events), for what Apple's API lacks.
    public let manager: DownloadManager
    private let slot: DelegateSlot

    /// The shared manager of this process (Apple's `BADownloadManager.shared`): the container
    /// from `BACKLOT_CONTAINER`, and from the configuration `BACKLOT_CONFIG` names (or the
    /// `Info.plist` beside the executable), when there is one, `BacklotCAFile` and
    /// `BAInitialDownloadRestrictions`. As Apple's traps when the app lacks its app group, this
    /// stops the process, naming what is missing, when `BACKLOT_CONTAINER` is not set.
    public static let shared: BADownloadManager = {
        do {
            return try BADownloadManager(environment: ProcessInfo.processInfo.environment)
        } catch {
            fatalError("BADownloadManager.shared cannot be made: \(error)")
        }
    }()

    /// A manager for a container (for tests, tools and servers; apps use ``shared``).
    /// - Throws: what ``DownloadManager/init(containerPath:restrictions:caFile:isAppClip:role:routing:)`` throws.
    public init(containerPath: String, restrictions: DownloadRestrictions? = nil, caFile: String? = nil) throws {
        let slot = DelegateSlot()
        self.slot = slot
        manager = try DownloadManager(
            containerPath: containerPath, restrictions: restrictions, caFile: caFile, role: .app,
            routing: { event, manager in slot.deliver(event, manager: manager) })
        manager.setChallengeResponder { download, challenge in slot.answer(download, challenge) }
    }

    /// The manager the environment describes (``shared``).
    /// - Throws: ``BacklotError/Code/usage`` naming `BACKLOT_CONTAINER` when it is not set;
    ///   ``BacklotError/Code/invalidInput`` for a configuration that cannot be read.
    public convenience init(environment: [String: String]) throws {
        let key = AssetPackManager.containerEnvironmentKey
        guard let container = environment[key], !container.isEmpty else {
            throw BacklotError(
                .usage, "\(key) is not set: name the app's container folder (the one backlot agent is given)",
                context: "environment", hint: "docs/porting.md describes the app's configuration")
        }
        var caFile: String? = nil
        var restrictions: DownloadRestrictions? = nil
        if let source = environment[AssetPackManager.configurationEnvironmentKey], !source.isEmpty {
            let root = try ConfigurationFile.read(path: source)
            let base = URL(fileURLWithPath: source).deletingLastPathComponent().path
            if let ca = root.dictionary?["BacklotCAFile"]?.string { caFile = ca.hasPrefix("/") ? ca : base + "/" + ca }
            if root.dictionary?["BAInitialDownloadRestrictions"] != nil {
                restrictions = try DownloadRestrictions(
                    infoPlist: root, manifestURLElsewhere: root.dictionary?["BAManifestURL"] == nil)
            }
        }
        try self.init(containerPath: container, restrictions: restrictions, caFile: caFile)
    }

    /// The object told about downloads (weak, as Apple's). Setting one makes this process receive
    /// the outcomes of downloads the agent runs; setting nil leaves them to the extension.
    public var delegate: (any BADownloadManagerDelegate)? {
        get { slot.delegate }
        set {
            slot.delegate = newValue
            if newValue != nil { try? manager.startListening() } else { try? manager.stopListening() }
        }
    }

    /// Seconds the delegate has to answer an authentication challenge before it is cancelled (60).
    var challengeAnswerSeconds: Int {
        get { slot.answerTimeout.load(ordering: .relaxed) }
        set { slot.answerTimeout.store(max(1, newValue), ordering: .relaxed) }
    }

    // MARK: Downloads

    /// Schedules a download, to run when the system (here, the agent or this process) chooses.
    /// - Throws: ``BackgroundDownloadError`` (its ``BackgroundDownloadError/errorCode`` is Apple's code).
    public func scheduleDownload(_ download: BADownload) throws {
        try manager.scheduleDownload(download)
    }

    /// Starts a download at once, in the foreground; a scheduled one is promoted and goes on from what arrived.
    /// - Throws: ``BackgroundDownloadError`` (Apple's codes 50 and 51 from an extension or a background process).
    public func startForegroundDownload(_ download: BADownload) throws {
        try manager.startForegroundDownload(download)
    }

    /// The downloads scheduled or in flight (it reads the container's database: not from a UI thread).
    public func fetchCurrentDownloads() throws -> [BADownload] {
        try manager.fetchCurrentDownloads().map { $0.with(state: .waiting) }
    }

    /// The same, given to a handler (Apple's completion form).
    public func fetchCurrentDownloads(completionHandler: @escaping ([BADownload], (any Error)?) -> Void) {
        do { completionHandler(try fetchCurrentDownloads(), nil) } catch { completionHandler([], error) }
    }

    /// The same, awaited (Apple's async form).
    public var currentDownloads: [BADownload] {
        get async throws { try fetchCurrentDownloads() }
    }

    /// Cancels a scheduled or running download; what arrived is removed.
    /// - Throws: ``BackgroundDownloadError`` with Apple's `downloadNotScheduled` meaning when it is not scheduled.
    public func cancel(_ download: BADownload) throws {
        guard try manager.fetchCurrentDownloads().contains(where: { $0.identifier == download.identifier }) else {
            throw BAError(.downloadNotScheduled)
        }
        try manager.cancel(download)
    }

    // MARK: Exclusive control

    /// Runs `performHandler` holding the container's exclusive control, across the app, the
    /// extension and the agent (Apple's handler form): `(true, nil)` once acquired, or
    /// `(false, error)` when it cannot be. The handler runs before this returns, on this thread.
    public func withExclusiveControl(_ performHandler: @escaping (Bool, (any Error)?) -> Void) {
        do { try manager.withExclusiveControl { performHandler(true, nil) } } catch { performHandler(false, error) }
    }

    /// The same, giving up at `date` (`Date()` tries once): `(false, error)` when not acquired by then.
    public func withExclusiveControl(
        beforeDate date: Date, perform performHandler: @escaping (Bool, (any Error)?) -> Void
    ) {
        do {
            let ran: Void? = try ExclusiveControl.of(container: manager.container.path).run(before: date) {
                performHandler(true, nil)
            }
            if ran == nil { performHandler(false, Self.notAcquired(date)) }
        } catch {
            performHandler(false, error)
        }
    }

    /// Runs `body` holding exclusive control, and returns what it returns (Apple's async form of iOS 27).
    /// - Throws: what `body` throws, or the error of taking the lock.
    public func withExclusiveControl<ReturnType>(_ body: @escaping () throws -> ReturnType) async throws -> ReturnType {
        try manager.withExclusiveControl(body)
    }

    /// The same, giving up at `date`.
    /// - Throws: ``BacklotError/Code/unavailable`` when exclusive control was not acquired before `date`.
    public func withExclusiveControl<ReturnType>(
        before date: Date, _ body: @escaping () throws -> ReturnType
    ) async throws -> ReturnType {
        guard let value = try ExclusiveControl.of(container: manager.container.path).run(before: date, body) else {
            throw Self.notAcquired(date)
        }
        return value
    }

    static func notAcquired(_ date: Date) -> BacklotError {
        BacklotError(
            .unavailable, "exclusive control of the download manager was not acquired before \(date)",
            hint: "another process (the app, the extension or the agent) holds it; try again later")
    }
}

/// The delegate (weak) and what is needed to turn ``DownloadManager/Event``s into its calls.
final class DelegateSlot: Sendable {
    // Safe because: it lives only inside `current`'s `Mutex`, which every read and write of the weak reference
    // holds; the delegate protocol is the app's (Apple's, not `Sendable`).
    // Tested: `BADownloadManagerTests.threadsReplaceTheDelegateWhileADownloadRuns`.
    private struct Weak: @unchecked Sendable { weak var value: (any BADownloadManagerDelegate)? }
    private let current = Mutex(Weak())
    /// Bytes reported so far per download, for `didWriteBytes`'s increment.
    private let written = Mutex<[String: UInt64]>([:])

    var delegate: (any BADownloadManagerDelegate)? {
        get { current.withLock { $0.value } }
        set { current.withLock { $0.value = newValue } }
    }

    func deliver(_ event: DownloadManager.Event, manager: DownloadManager) {
        let target = delegate
        switch event {
        case .began(let d):
            written.withLock { $0[d.identifier] = 0 }
            target?.downloadDidBegin(d.with(state: .downloading))
        case .progress(let d, let received, let expected):
            let before = written.withLock { w -> UInt64 in
                let b = w[d.identifier] ?? 0
                w[d.identifier] = received
                return b
            }
            target?.download(
                d.with(state: .downloading), didWriteBytes: Int64(clamping: received >= before ? received - before : 0),
                totalBytesWritten: Int64(clamping: received), totalBytesExpectedToWrite: Int64(clamping: expected))
        case .paused(let d):
            target?.downloadDidPause(d.with(state: .waiting))
        case .failed(let d, let error):
            written.withLock { _ = $0.removeValue(forKey: d.identifier) }
            if let target {
                target.download(d.with(state: .failed), failedWithError: error)
            } else {
                keep(event, manager)
            }
        case .finished(let d, let url):
            written.withLock { _ = $0.removeValue(forKey: d.identifier) }
            if let target {
                target.download(d.with(state: .finished), finishedWithFileURL: url)
            } else {
                keep(event, manager)
            }
        }
    }

    /// The delegate's answer to a challenge, waited for (at most ``answerTimeout`` seconds; then
    /// the challenge is cancelled); without a delegate, default handling.
    func answer(
        _ download: URLDownload, _ challenge: URLAuthenticationChallenge
    ) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        guard let target = delegate else { return (.performDefaultHandling, nil) }
        let box = AnswerBox()
        target.download(download.with(state: .downloading), didReceive: challenge) { disposition, credential in
            box.set(disposition, credential)
        }
        return box.wait(seconds: answerTimeout.load(ordering: .relaxed))
    }

    /// Seconds the delegate has to answer a challenge: 60 (a test that shares Swift's cooperative
    /// threads with many others gives a delegate's async answer longer to be scheduled).
    let answerTimeout = Atomic<Int>(60)

    /// No delegate (or it went away): the outcome is kept for the next one; this process stops
    /// listening, so that the agent wakes the extension for what it runs from now on.
    private func keep(_ event: DownloadManager.Event, _ manager: DownloadManager) {
        try? manager.stopListening()
        _ = try? manager.postToApp(event)
    }
}

/// One challenge's answer, given once from any thread.
final class AnswerBox: Sendable {
    private let answered = DispatchSemaphore(value: 0)
    private let value = Mutex<(URLSession.AuthChallengeDisposition, URLCredential?)?>(nil)

    func set(_ disposition: URLSession.AuthChallengeDisposition, _ credential: URLCredential?) {
        let first = value.withLock { v -> Bool in
            guard v == nil else { return false }
            v = (disposition, credential)
            return true
        }
        if first { answered.signal() }
    }

    func wait(seconds: Int) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        guard answered.wait(timeout: .now() + .seconds(seconds)) == .success else {
            return (.cancelAuthenticationChallenge, nil)
        }
        return value.withLock { $0 } ?? (.cancelAuthenticationChallenge, nil)
    }
}
