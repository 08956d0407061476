import BacklotBasics
import BacklotContainer
import BacklotCrypto
import BacklotHTTPClient
import BacklotStore
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A plain URL download with a unique identifier (Apple's `BAURLDownload`).
public struct URLDownload: Sendable, Hashable {
    public let identifier: String
    public let url: URL
    /// The exact size; required for essential downloads.
    public let fileSize: UInt64?
    public let isEssential: Bool
    /// Higher runs first.
    public let priority: Int
    /// Where the download is, as the manager that handed it over saw it (Apple's `BADownload.state`);
    /// not part of a download's identity (two values that differ only in their state are equal).
    public internal(set) var state: State = .created

    public init(identifier: String, url: URL, fileSize: UInt64? = nil, isEssential: Bool = false, priority: Int = 0) {
        self.identifier = identifier
        self.url = url
        self.fileSize = fileSize
        self.isEssential = isEssential
        self.priority = priority
    }

    public static func == (a: URLDownload, b: URLDownload) -> Bool {
        a.identifier == b.identifier && a.url == b.url && a.fileSize == b.fileSize && a.isEssential == b.isEssential
            && a.priority == b.priority
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(identifier)
        hasher.combine(url)
        hasher.combine(fileSize)
        hasher.combine(isEssential)
        hasher.combine(priority)
    }
}

/// Why a URL download is refused or failed (Apple's `BAError` meanings).
public enum BackgroundDownloadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Before the app's first launch, only hosts on `BADownloadDomainAllowList` may be used.
    case domainNotAllowed(String)
    /// The download would use more than the allowance left before the first launch.
    case allowanceExceeded(needed: UInt64, remaining: UInt64)
    /// Essential downloads must declare their exact size.
    case essentialDownloadNeedsFileSize(String)
    /// The file did not have the size declared.
    case sizeMismatch(expected: UInt64, received: UInt64)
    /// A download with this identifier is already scheduled.
    case duplicateIdentifier(String)
    /// Only https (and http to loopback, for development) URLs are downloaded.
    case insecureURL(URL)
    /// The download would take the downloads' total past `BAMaxInstallSize` (or `BAEssentialMaxInstallSize`).
    case maxInstallSizeExceeded(needed: UInt64, remaining: UInt64)
    /// Essential downloads are not permitted here: in an App Clip, or scheduled by the app (only
    /// install and update content requests return them).
    case essentialDownloadNotPermitted(String)
    /// Scheduling is refused while the downloader extension's `downloads(for:)` runs: return the downloads from it instead.
    case schedulingBlockedDuringContentRequest(String)
    /// Not allowed from the downloader extension (Apple's `callFromExtensionNotAllowed`): a
    /// foreground download is started by the app only.
    case callFromExtensionNotAllowed(String)
    /// Not allowed from a process that is not the active app (Apple's
    /// `callFromInactiveProcessNotAllowed`): the agent, or the app launched in the background for a task.
    case callFromInactiveProcessNotAllowed(String)

    /// Apple's `BAErrorCode` raw value with the same meaning.
    public var code: Int {
        switch self {
        case .domainNotAllowed: 202
        case .allowanceExceeded: 203
        case .essentialDownloadNeedsFileSize: 102
        case .sizeMismatch: 103
        case .duplicateIdentifier: 100
        case .insecureURL: 102
        case .maxInstallSizeExceeded: 112
        case .essentialDownloadNotPermitted: 109
        case .schedulingBlockedDuringContentRequest: 50
        case .callFromExtensionNotAllowed: 50
        case .callFromInactiveProcessNotAllowed: 51
        }
    }

    public var description: String {
        switch self {
        case .domainNotAllowed(let h):
            "\(h) is not on the download domain allow list; before the app's first launch only listed hosts may be used"
        case .allowanceExceeded(let n, let r):
            "the download needs \(n) bytes but only \(r) remain of the allowance before the app's first launch"
        case .essentialDownloadNeedsFileSize(let id): "the essential download \(id) must declare its exact file size"
        case .sizeMismatch(let e, let r): "the file has \(r) bytes, not the \(e) declared"
        case .duplicateIdentifier(let id): "a download with the identifier \(id) is already scheduled"
        case .insecureURL(let u): "\(u) is not an https URL"
        case .maxInstallSizeExceeded(let n, let r):
            "the download needs \(n) bytes but only \(r) remain under the maximum install size"
        case .essentialDownloadNotPermitted(let id):
            "the download \(id) is essential, which is not permitted here (an App Clip can't mark downloads essential); schedule it as non-essential"
        case .schedulingBlockedDuringContentRequest(let id):
            "\(id) can't be scheduled while the downloader extension answers a content request; return it from downloads(for:) instead"
        case .callFromExtensionNotAllowed(let id):
            "\(id) can't be started in the foreground from the downloader extension; schedule it, or let the app start it"
        case .callFromInactiveProcessNotAllowed(let id):
            "\(id) can't be started in the foreground from a background process (the agent, or a background launch); schedule it instead"
        }
    }
}

/// Schedules and runs URL downloads for a container (Apple's `BADownloadManager`): resumable,
/// persisted across restarts, limited by the restrictions before the app's first launch, with a
/// real cross-process lock (``withExclusiveControl(_:)``).
///
/// The `finished` event hands over a file URL: move the file before the handler returns, or it is
/// deleted.
public final class DownloadManager: Sendable {
    /// What happens to a download.
    public enum Event: Sendable {
        case began(URLDownload)
        case progress(URLDownload, received: UInt64, expected: UInt64)
        /// The connection failed in the agent's process (the network or the server went away): the
        /// download stays scheduled, keeps what arrived, and goes on after a back-off (it fails
        /// after about two hours of failed connections).
        case paused(URLDownload)
        case failed(URLDownload, any Error)
        /// Move the file before the handler returns; it is deleted afterwards.
        case finished(URLDownload, URL)
    }

    let container: ClientContainer
    let http: HTTPClient
    let restrictions: DownloadRestrictions?
    /// An App Clip's container: essential downloads are refused.
    public let isAppClip: Bool
    public let role: Role

    /// Which process runs scheduled downloads.
    public enum Role: Sendable {
        /// The app (or a tool): it runs scheduled downloads itself unless a background agent runs
        /// for the container, which then runs them; foreground downloads always run here.
        case app
        /// The background agent: scheduled downloads run when it calls ``resumeScheduled()``.
        case agent
    }
    let handler: @Sendable (Event, DownloadManager) -> Void
    private let queue = DispatchQueue(label: "backlot.url-downloads")
    private let cancelled = Mutex<Set<String>>([])
    private let running = Mutex<Set<String>>([])
    let listening = Mutex<ListeningState?>(nil)
    /// The recorded outcome the handler is being given, and on which thread.
    let handover = Mutex<CurrentHandover?>(nil)
    private let resumePending = Atomic<Bool>(false)
    /// ``stop()`` was called: transfers end at once and stay scheduled, and nothing new starts.
    private let stopping = Atomic<Bool>(false)
    private let agentWatch = Mutex<RepeatingTimer?>(nil)
    private let launchSeen = Atomic<Bool>(false)
    /// Who answers HTTP authentication challenges (``setChallengeResponder(_:)``).
    let challengeResponder = Mutex<ChallengeResponder?>(nil)

    /// - Parameter isAppClip: the container is an App Clip's: essential downloads are refused
    ///   (``BackgroundDownloadError/essentialDownloadNotPermitted(_:)``).
    ///   The mark is kept in the container, so that every process using it refuses them.
    ///   - role: whether this process runs scheduled downloads (``Role``).
    public convenience init(
        containerPath: String, restrictions: DownloadRestrictions? = nil, caFile: String? = nil,
        isAppClip: Bool = false,
        role: Role = .app, handler: @escaping @Sendable (Event) -> Void
    ) throws {
        try self.init(
            containerPath: containerPath, restrictions: restrictions, caFile: caFile, isAppClip: isAppClip, role: role,
            routing: { event, _ in handler(event) })
    }

    /// The same, with a handler that is also given the manager (to post the outcome to the app, or
    /// to keep it for the extension, as the agent does), so that nothing has to hold the manager
    /// for the handler.
    public init(
        containerPath: String, restrictions: DownloadRestrictions? = nil, caFile: String? = nil,
        isAppClip: Bool = false,
        role: Role = .app, routing handler: @escaping @Sendable (Event, DownloadManager) -> Void
    ) throws {
        container = try ClientContainer(path: containerPath)
        http = HTTPClient(caFile: caFile)
        self.restrictions = restrictions
        if isAppClip { try container.markAppClip() }
        self.isAppClip = container.isMarkedAppClip
        self.role = role
        self.handler = handler
        try FileSystem.makeDirectories(container.layout.downloadsFolder)
        // Outcomes an app process recorded and did not hand over before it stopped (the agent hands
        // over its own when it starts, once its handler can route them).
        if role == .app { queue.async { try? self.deliverRecordedOutcomes() } }
        // Downloads scheduled before a restart go on.
        if !(try fetchCurrentDownloads()).isEmpty { runOrDeferToAgent() }
    }

    /// In the app: runs scheduled downloads now, or, while an agent runs them, checks every 2 s
    /// that it still runs and takes them back when it has stopped.
    func runOrDeferToAgent() {
        guard role == .app else { return }
        if !container.isAgentRunning {
            resumeScheduled()
            return
        }
        agentWatch.withLock { watch in
            guard watch == nil else { return }
            watch = RepeatingTimer(label: "backlot.agent-watch", every: 2) { [weak self] in
                guard let self else { return }
                let pending = !((try? self.fetchCurrentDownloads()) ?? []).isEmpty
                if !pending || !self.container.isAgentRunning {
                    self.agentWatch.withLock {
                        $0?.cancel()
                        $0 = nil
                    }
                    if pending { self.resumeScheduled() }
                }
            }
        }
    }

    func partialPath(_ id: String) -> String { container.layout.partialDownload(id) }

    /// Removes a download's partial file by its name, relative to the downloads folder's
    /// descriptor (never through a link that folder was swapped for).
    func removePartial(_ id: String) {
        guard let name = ContainerLayout.recordedName(partialPath(id)),
            let folders = try? container.layout.openDownloadFolders()
        else { return }
        try? folders.downloads.removeFile(Array(name.utf8))
    }

    /// Queues a download to run in the background.
    /// - Throws: ``BackgroundDownloadError`` when the restrictions or the declaration refuse it.
    /// Essential downloads are not scheduled by the app (Apple: "they may only be scheduled from
    /// the extension with a content request of type install or update"): the agent schedules the
    /// ones the extension returns for an install or update event; the app's are refused with
    /// ``BackgroundDownloadError/essentialDownloadNotPermitted(_:)`` (schedule
    /// `removingEssential`'s twin: the same download with `isEssential: false`).
    public func scheduleDownload(_ download: URLDownload) throws {
        if role == .app, download.isEssential {
            throw BackgroundDownloadError.essentialDownloadNotPermitted(download.identifier)
        }
        try schedule(download)
    }

    func schedule(_ download: URLDownload) throws {
        try check(download)
        if let holder = try container.meta(.contentRequest).flatMap({ CheckedInteger.parse($0, as: Int32.self) }),
            holder > 0, holder != getpid(), kill(holder, 0) == 0 || errno == EPERM
        {
            throw BackgroundDownloadError.schedulingBlockedDuringContentRequest(download.identifier)
        }
        // The size may come from an extension's answer: checked, never `Int64(someUInt64)`.
        let fileSize = try download.fileSize.map {
            try CheckedInteger.convert(
                $0, to: Int64.self, "the download's fileSize", in: 0...Int64.max, context: download.identifier)
        }
        let priority = try CheckedInteger.convert(
            download.priority, to: Int64.self, "the download's priority", context: download.identifier)
        do {
            try container.store.transaction { tx in
                // The install-size cap counts what is installed and what is scheduled or in flight
                // (each declared size is reserved by its row), checked and reserved in one transaction.
                if let size = fileSize, let max = installCap(essential: download.isEssential) {
                    let committed = try Self.committedInstallSize(tx, essential: download.isEssential)
                    let left = max > committed ? max - committed : 0
                    if UInt64(size) > left {
                        throw BackgroundDownloadError.maxInstallSizeExceeded(needed: UInt64(size), remaining: left)
                    }
                }
                try tx.scheduleURLDownload(
                    URLDownloadRecord(
                        identifier: download.identifier, url: download.url.absoluteString, fileSize: fileSize,
                        essential: download.isEssential, priority: priority),
                    created: Int64(Date().timeIntervalSince1970))
            }
        } catch let e as BacklotError where e.code == .conflict {
            throw BackgroundDownloadError.duplicateIdentifier(download.identifier)
        }
        WakeChannel.poke(path: container.layout.agentWakeChannel)  // a running agent takes it at once
        runOrDeferToAgent()
    }

    /// Runs a download now, in the foreground, whether it was scheduled or not; what already
    /// arrived is not fetched again. A scheduled download the agent (or another process) is
    /// transferring is taken over: that process stops it, keeping what arrived, and this one goes on from there.
    /// - Throws: ``BackgroundDownloadError/callFromExtensionNotAllowed(_:)`` in the downloader
    ///   extension, ``BackgroundDownloadError/callFromInactiveProcessNotAllowed(_:)`` in the agent
    ///   or in an app launched in the background for a task (Apple's codes 50 and 51), or what
    ///   ``scheduleDownload(_:)`` throws for a download not scheduled yet.
    public func startForegroundDownload(_ download: URLDownload) throws {
        if Self.isExtensionProcess.load(ordering: .relaxed) {
            throw BackgroundDownloadError.callFromExtensionNotAllowed(download.identifier)
        }
        if role == .agent || ProcessInfo.processInfo.environment["BACKLOT_BACKGROUND_TASK"] != nil {
            throw BackgroundDownloadError.callFromInactiveProcessNotAllowed(download.identifier)
        }
        let scheduled = try fetchCurrentDownloads().first(where: { $0.identifier == download.identifier })
        if scheduled == nil { try scheduleDownload(download) }
        let d = scheduled ?? download
        // A transfer: blocking for as long as it takes.
        BlockingPool.longRunning.submit { self.run(d, foreground: true) }
    }

    /// Set in a downloader extension's process (by `BacklotExtension`'s host): the calls Apple
    /// refuses from an extension are refused.
    package static let isExtensionProcess = Atomic<Bool>(false)

    /// The file whose presence asks the process transferring a download to stop and leave it to
    /// the one that promoted it to the foreground.
    func takeoverPath(_ id: String) -> String { container.layout.downloadTakeover(id) }

    /// The downloads scheduled and not finished.
    public func fetchCurrentDownloads() throws -> [URLDownload] {
        try container.store.read { try $0.scheduledURLDownloads() }.compactMap { r in
            try Self.storedDownload(r, table: "url_downloads", container: container)
        }
    }

    /// A download read back from the container (which another process may have written): its
    /// size and priority go through ``CheckedInteger``.
    /// - Returns: nil for a record without an identifier or a URL.
    /// - Throws: ``BacklotError/Code/invalidInput`` naming the column when a stored number is out of range.
    static func storedDownload(
        _ r: URLDownloadRecord, table: String, container: ClientContainer
    ) throws -> URLDownload? {
        guard !r.identifier.isEmpty, let url = URL(string: r.url) else { return nil }
        let context = "\(container.layout.stateDatabase), \(table) \(r.identifier)"
        let size = try r.fileSize.map {
            try CheckedInteger.convert($0, to: UInt64.self, "the stored file_size", context: context)
        }
        let priority = try CheckedInteger.convert(r.priority, to: Int.self, "the stored priority", context: context)
        return URLDownload(
            identifier: r.identifier, url: url, fileSize: size, isEssential: r.essential, priority: priority)
    }

    /// Cancels a download and removes what arrived.
    public func cancel(_ download: URLDownload) throws {
        cancelled.withLock { _ = $0.insert(download.identifier) }
        try container.store.transaction { tx in try tx.unscheduleURLDownload(download.identifier) }
        if running.withLock({ !$0.contains(download.identifier) }) { removePartial(download.identifier) }
    }

    /// Runs `body` holding the container's exclusive lock: no other process (an app, the agent)
    /// holds it at the same time, and finished downloads are handed over under it.
    /// It is re-entrant within a process: a handler may call it again.
    public func withExclusiveControl<T>(_ body: () throws -> T) throws -> T {
        try ExclusiveControl.of(container: container.path).run(body)
    }

    /// Records a launch of the app in the container's one launch record (``AppLaunchRecord``,
    /// which `AppPresence.markRunning` writes when the app starts): the restrictions before the
    /// first launch no longer apply, in any process. An app that marks itself running as the
    /// documented template does needs not call it.
    public func markAppLaunched() throws {
        try AppLaunchRecord.record(containerPath: container.path)
        launchSeen.store(true, ordering: .relaxed)
    }

    /// Whether the app has been launched: the container's launch record holds a launch (or the
    /// container was marked launched by an earlier version). Once true it stays true.
    var launched: Bool {
        if launchSeen.load(ordering: .relaxed) { return true }
        guard
            AppLaunchRecord.firstLaunch(containerPath: container.path) != nil
                || (try? container.meta(.launched)) == "1"
        else { return false }
        launchSeen.store(true, ordering: .relaxed)
        return true
    }

    func used(_ essential: Bool) -> UInt64 {
        (try? container.meta(essential ? .usedEssential : .used)).flatMap { $0.flatMap(UInt64.init) } ?? 0
    }

    /// Counts bytes fetched outside this manager (such as a manifest the agent fetched) against
    /// the allowance before the first launch.
    public func countTowardsAllowance(bytes: UInt64, essential: Bool) throws {
        guard restrictions?.appliesBeforeFirstLaunch == true, !launched else { return }
        try container.setMeta(
            essential ? .usedEssential : .used, String(CheckedInteger.saturatingAdd(used(essential), bytes)))
    }

    /// Before the app's first launch, whether `url`'s host may be contacted: Apple's
    /// `BADownloadDomainAllowList` applies to every host, the catalog's and the packs' as well as
    /// URL downloads'.
    /// - Throws: ``BackgroundDownloadError/domainNotAllowed(_:)`` (Apple's 202).
    public func checkHostBeforeFirstLaunch(_ url: URL) throws {
        guard let r = restrictions, r.appliesBeforeFirstLaunch, !launched else { return }
        let host = url.host ?? ""
        guard r.allows(host: host) else { throw BackgroundDownloadError.domainNotAllowed(host) }
    }

    /// Before the app's first launch, whether `bytes` more fit in the allowance (Apple's 203 when not).
    /// - Throws: ``BackgroundDownloadError/allowanceExceeded(needed:remaining:)``.
    public func checkAllowance(bytes: UInt64, essential: Bool) throws {
        if let remaining = remainingAllowance(essential: essential), bytes > remaining {
            throw BackgroundDownloadError.allowanceExceeded(needed: bytes, remaining: remaining)
        }
    }

    /// Counts the catalog this container verified last (the size of its signed envelope, the
    /// bytes its fetch transferred) against `BADownloadAllowance` before the first launch, as
    /// Apple counts the manifest download.
    public func countCatalogFetch() throws {
        guard restrictions?.appliesBeforeFirstLaunch == true, !launched,
            let text = try container.meta(.catalogEnvelope), let envelope = Data(base64Encoded: text)
        else { return }
        try countTowardsAllowance(bytes: UInt64(envelope.count), essential: false)
    }

    func installed(_ essential: Bool) -> UInt64 {
        (try? container.meta(essential ? .installedEssentialBytes : .installedBytes)).flatMap {
            $0.flatMap(UInt64.init)
        } ?? 0
    }

    /// What remains of the allowance before the first launch (nil when downloads are not
    /// restricted): Apple's `BAAppExtensionInfo.restrictedDownloadSizeRemaining` and its essential twin.
    public func remainingAllowance(essential: Bool) -> UInt64? {
        guard let r = restrictions, r.appliesBeforeFirstLaunch, !launched else { return nil }
        let allowance = essential ? r.essentialDownloadAllowance : r.downloadAllowance
        return allowance > used(essential) ? allowance - used(essential) : 0
    }

    func check(_ d: URLDownload) throws {
        let local = ["127.0.0.1", "localhost", "::1"].contains(d.url.host ?? "")
        guard d.url.scheme == "https" || (d.url.scheme == "http" && local) else {
            throw BackgroundDownloadError.insecureURL(d.url)
        }
        if container.isMarkedAppClip, d.isEssential {
            throw BackgroundDownloadError.essentialDownloadNotPermitted(d.identifier)
        }
        if d.isEssential, d.fileSize == nil {
            throw BackgroundDownloadError.essentialDownloadNeedsFileSize(d.identifier)
        }
        if let r = restrictions, r.appliesBeforeFirstLaunch, !launched {
            guard r.allows(host: d.url.host ?? "") else {
                throw BackgroundDownloadError.domainNotAllowed(d.url.host ?? "")
            }
            if let size = d.fileSize, let remaining = remainingAllowance(essential: d.isEssential), size > remaining {
                throw BackgroundDownloadError.allowanceExceeded(needed: size, remaining: remaining)
            }
        }
    }

    /// `BAMaxInstallSize` (or `BAEssentialMaxInstallSize` for essential downloads), if set.
    func installCap(essential: Bool) -> UInt64? {
        essential ? restrictions?.essentialMaxInstallSize : restrictions?.maxInstallSize
    }

    /// What counts against an install-size cap, read inside a transaction: the bytes of finished
    /// downloads of that kind, plus the declared sizes of those scheduled or in flight (their
    /// reservations), except `excluding`'s.
    static func committedInstallSize(
        _ tx: StateTransaction, essential: Bool, excluding: String? = nil
    ) throws -> UInt64 {
        var total = try installedBytes(tx, essential: essential)
        for size in try tx.reservedURLDownloadSizes(essential: essential, excluding: excluding) {
            total = CheckedInteger.saturatingAdd(total, UInt64(max(0, size)))
        }
        return total
    }

    /// The `meta` key of the bytes of finished downloads of one kind.
    static func installedBytesKey(essential: Bool) -> StateKey {
        essential ? .installedEssentialBytes : .installedBytes
    }

    /// The bytes of finished downloads of one kind (0 for a stored value that is not a count).
    static func installedBytes(_ tx: StateTransaction, essential: Bool) throws -> UInt64 {
        try tx.value(forKey: installedBytesKey(essential: essential)).flatMap(UInt64.init) ?? 0
    }

    /// What is left under the install-size cap for `d` (its own reservation not counted); nil without a cap.
    func installHeadroom(for d: URLDownload) -> UInt64? {
        guard let max = installCap(essential: d.isEssential) else { return nil }
        let committed =
            (try? container.store.read { tx in
                try Self.committedInstallSize(tx, essential: d.isEssential, excluding: d.identifier)
            }) ?? 0
        return max > committed ? max - committed : 0
    }

    /// Runs scheduled downloads, highest priority first, until none is left.
    func runScheduled() {
        resumePending.store(false, ordering: .relaxed)
        var skip = pausedUntilLater()  // run by another process (the app, or the agent), or paused
        while !stopping.load(ordering: .acquiring),
            let next = (try? fetchCurrentDownloads())?.first(where: { d in
                !skip.contains(d.identifier) && running.withLock { !$0.contains(d.identifier) }
            })
        {
            if run(next) != .done { skip.insert(next.identifier) }
        }
    }

    /// Paused downloads whose next attempt is not due yet.
    func pausedUntilLater() -> Set<String> {
        let now = Date().timeIntervalSince1970
        return Set(
            (try? container.store.read { try $0.pausedURLDownloads(retryingAfter: now) }) ?? [])
    }

    /// After a failed connection: pauses the download (true) with a back-off of 2^n seconds (at
    /// most an hour), or gives up after ``maximumPauses`` in a row (false: it fails).
    func pauseAgain(_ id: String) -> Bool {
        // The stored count is compared before it is incremented: a crafted Int64.max never overflows.
        let stored = (try? container.store.read { try $0.pauseCount(id) }) ?? 0
        guard stored < Self.maximumPauses else { return false }
        let attempts = max(0, stored) + 1
        let after = Date().timeIntervalSince1970 + min(3600, pow(2, Double(attempts)))
        _ = try? container.store.transaction { tx in
            try tx.pauseURLDownload(id, attempts: attempts, retryAfter: after)
        }
        return true
    }

    /// Connection failures in a row after which a paused download fails (about two hours of back-off).
    static let maximumPauses: Int64 = 12

    func clearPauses(_ id: String) {
        _ = try? container.store.transaction { tx in try tx.clearPauses(id) }
    }

    /// Takes the cross-process lock of one download, so that the app and the agent never write
    /// one partial file at once; nil when another process holds it.
    func lockDownload(_ id: String, wait: Bool = false) -> FileLock? {
        try? container.layout.acquire(.download(id), waiting: wait)
    }

    /// What became of one attempt.
    enum Attempt { case done, elsewhere, paused }

    /// Downloads (resuming), checks the size, and hands the file over under the exclusive lock.
    /// - Parameter foreground: promoted by the app: a download another process transfers is taken
    ///   over (it is asked to stop, and this one waits for it and goes on from what arrived).
    @discardableResult
    func run(_ d: URLDownload, foreground: Bool = false) -> Attempt {
        guard running.withLock({ $0.insert(d.identifier).inserted }) else { return .done }
        defer { running.withLock { _ = $0.remove(d.identifier) } }
        let takeover = takeoverPath(d.identifier)
        var held = lockDownload(d.identifier)
        if held == nil, foreground {
            let fd = open(takeover, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            if fd >= 0 { close(fd) }
            held = lockDownload(d.identifier, wait: true)
        }
        if foreground { unlink(takeover) }
        guard let lock = held else { return .elsewhere }
        defer { lock.release() }
        // A file a stopped attempt had finished and recorded is renamed away before the partial
        // file is used again.
        try? completeStagings(for: d.identifier)
        // It may have finished in the other process while this one waited.
        guard (try? fetchCurrentDownloads())?.contains(where: { $0.identifier == d.identifier }) == true else {
            return .done
        }
        var answered = false  // the server answered: a failure now is the download's, not the network's
        var headroom: UInt64? = nil  // the install-size cap's room for a download of no declared size
        cancelled.withLock { _ = $0.remove(d.identifier) }
        let part = partialPath(d.identifier)
        // What is there is the container's (the app can write it): anything but a regular file of
        // one name (a symbolic or hard link, above all) is removed, never written through, and the
        // download starts from nothing.
        var found = (try? FileSystem.linkStatus(part)) ?? nil
        if let seen = found, seen.kind != .regular || seen.linkCount != 1 {
            removePartial(d.identifier)
            found = nil
        }
        let already = found?.size ?? 0
        handler(.began(d), self)
        do {
            let remaining = remainingAllowance(essential: d.isEssential)
            // A download without a declared size reserved nothing: it may take at most what is left under the cap.
            headroom = d.fileSize == nil ? installHeadroom(for: d) : nil
            let limit = [d.fileSize, remaining.map { CheckedInteger.saturatingAdd(already, $0) }, headroom].compactMap {
                $0
            }.min()
            // A 401 is put to the challenge responder (the app's delegate): a credential it gives
            // is sent with the request again, at most a few times.
            // An HTTPS server's certificates are put to it first (a server-trust challenge): a key it
            // trusts is pinned for every transfer of this attempt.
            let pin = try answerServerTrust(d)
            var challenges = 0
            var result = try transfer(
                d, to: part, from: already, limit: limit, headers: [:], pin: pin, foreground: foreground)
            while result.status == 401,
                let credentials = try answerChallenge(d, headers: result.headers, previousFailures: challenges)
            {
                challenges += 1
                result = try transfer(
                    d, to: part, from: already, limit: limit, headers: credentials, pin: pin, foreground: foreground)
            }
            answered = true
            // A server that ignored the Range sent the whole file again (the part restarted at 0).
            if remaining != nil {
                try countTowardsAllowance(
                    bytes: result.size >= already ? result.size - already : result.size, essential: d.isEssential)
            }
            guard result.status == 200 || result.status == 206 else {
                throw BacklotError(.io, "\(d.url) answered \(result.status)", context: d.identifier)
            }
            if let size = d.fileSize, result.size != size {
                removePartial(d.identifier)
                throw BackgroundDownloadError.sizeMismatch(expected: size, received: result.size)
            }
            // One transaction checks the install-size cap (a download of no declared size is checked
            // here, with every other reservation counted), turns the reservation into installed
            // bytes, retires the download and records its outcome; then the file is renamed to its
            // hand-over path, and the outcome handed over under the exclusive lock. A stop or a
            // crash at any step leaves a record that the next start delivers.
            let cap = installCap(essential: d.isEssential)
            let seq: Int64?
            do {
                seq = try retire(d, kind: "finished", staged: part, message: nil, code: nil) { tx in
                    let committed = try Self.committedInstallSize(
                        tx, essential: d.isEssential, excluding: d.identifier)
                    if let cap, CheckedInteger.saturatingAdd(committed, result.size) > cap {
                        throw BackgroundDownloadError.maxInstallSizeExceeded(
                            needed: result.size, remaining: cap > committed ? cap - committed : 0)
                    }
                    let done = try Self.installedBytes(tx, essential: d.isEssential)
                    try tx.setValue(
                        String(CheckedInteger.saturatingAdd(done, result.size)),
                        forKey: Self.installedBytesKey(essential: d.isEssential))
                }
            } catch let e as BackgroundDownloadError {
                removePartial(d.identifier)
                throw e
            }
            guard let seq else { return .done }
            TestStopPoint.reach("handover.afterRecord")
            try completeStagings(for: d.identifier)
            TestStopPoint.reach("handover.afterRename")
            clearPauses(d.identifier)
            handOver(seq)
        } catch {
            // A failed download leaves the queue (the app schedules it again if it wants; what
            // arrived is kept and resumed then, unless the bytes are known to be wrong).
            var reported = error
            // Bytes that came over the network count against the allowance, even for a failed download.
            let arrived = (try? FileSystem.status(part))??.size ?? already
            if arrived > already { try? countTowardsAllowance(bytes: arrived - already, essential: d.isEssential) }
            if let e = error as? BacklotError, e.code == .quotaExceeded {
                removePartial(d.identifier)
                if let size = d.fileSize {
                    reported = BackgroundDownloadError.sizeMismatch(
                        expected: size, received: CheckedInteger.saturatingAdd(size, 1))
                } else if let headroom,
                    headroom
                        < (remainingAllowance(essential: d.isEssential).map {
                            CheckedInteger.saturatingAdd(already, $0)
                        } ?? UInt64.max)
                {
                    reported = BackgroundDownloadError.maxInstallSizeExceeded(
                        needed: CheckedInteger.saturatingAdd(headroom, 1), remaining: headroom)
                } else {
                    let left = remainingAllowance(essential: d.isEssential) ?? 0
                    reported = BackgroundDownloadError.allowanceExceeded(
                        needed: CheckedInteger.saturatingAdd(left, 1), remaining: left)
                }
            } else if let e = error as? BacklotError, e.code == .cancelled, !foreground, access(takeover, F_OK) == 0,
                cancelled.withLock({ !$0.contains(d.identifier) })
            {
                // The app promoted it to the foreground: it goes on there, from what arrived.
                return .elsewhere
            } else if let e = error as? BacklotError, e.code == .cancelled, stopping.load(ordering: .acquiring),
                cancelled.withLock({ !$0.contains(d.identifier) })
            {
                // This process stops (the agent on SIGTERM): the download stays scheduled with what
                // arrived, for the next start.
                return .paused
            } else if let e = error as? BacklotError, e.code == .cancelled {
                removePartial(d.identifier)
            } else if role == .agent, !answered, let e = error as? BacklotError, e.code == .io, pauseAgain(d.identifier)
            {
                // The connection failed (the network, the server): keep it scheduled with what
                // arrived; the agent tries again after a back-off, and reports it failed after many tries.
                handler(.paused(d), self)
                return .paused
            }
            clearPauses(d.identifier)
            // Recorded as it leaves the queue, in the same transaction; a download cancelled by
            // this process (no longer scheduled) is reported to its handler only.
            let code = (reported as? BackgroundDownloadError)?.code
            if let seq = try? retire(d, kind: "failed", staged: nil, message: "\(reported)", code: code) {
                TestStopPoint.reach("handover.afterRecord")
                handOver(seq, live: .failed(d, reported))
            } else {
                _ = try? container.store.transaction { tx in try tx.unscheduleURLDownload(d.identifier) }
                _ = try? withExclusiveControl { handler(.failed(d, reported), self) }
            }
        }
        return .done
    }

    /// One HTTP transfer of a download into its partial file, reporting progress, stopped when
    /// the download is cancelled or (in the background) promoted to the foreground elsewhere.
    private func transfer(
        _ d: URLDownload, to part: String, from already: UInt64, limit: UInt64?, headers: [String: String],
        pin: String? = nil, foreground: Bool
    ) throws -> (status: Int, headers: [String: String], size: UInt64) {
        let id = d.identifier
        let takeover = takeoverPath(id)
        // Opened by its name relative to the downloads folder's descriptor: the app can write the
        // container, and neither the folder nor the file is followed if it is a link.
        guard let name = ContainerLayout.recordedName(part) else {
            throw BacklotError(.invalidInput, "is not a file name", context: part)
        }
        let file = try container.layout.openDownloadFolders().downloads.openFileForWriting(name)
        defer { file.close() }
        return try http.download(
            d.url.absoluteString, into: file, from: already, limit: limit, headers: headers, pinnedPublicKey: pin,
            progress: { [handler, self] received, _ in
                handler(.progress(d, received: received, expected: d.fileSize ?? 0), self)
            },
            isCancelled: { [self] in
                self.cancelled.withLock { $0.contains(id) } || (!foreground && access(takeover, F_OK) == 0)
                    || self.stopping.load(ordering: .acquiring)
            })
    }

    /// Runs the downloads scheduled so far that no process runs (the agent calls it each round,
    /// for what an app scheduled before it closed).
    public func resumeScheduled() {
        // One pending run at a time: calls while one waits add nothing to the queue.
        guard resumePending.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else {
            return
        }
        queue.async { self.runScheduled() }
    }

    /// Waits until the background queue has run everything scheduled so far (for tools and tests).
    public func waitUntilIdle() { queue.sync {} }

    /// Stops this process's part in the downloads before it exits: a transfer running now ends
    /// (what arrived is kept, the download stays scheduled for the next start), none starts, and it
    /// returns once the background queue is idle, so that no transfer is left using the network
    /// libraries while the process exits; or after `seconds`, when the queue is held elsewhere (a
    /// handler that does not return). Never call it from a handler.
    /// - Returns: whether the queue was idle in time.
    @discardableResult
    public func stop(waitingAtMost seconds: Double = 10) -> Bool {
        stopping.store(true, ordering: .releasing)
        let idle = DispatchSemaphore(value: 0)
        queue.async { idle.signal() }
        return idle.wait(timeout: .now() + seconds) == .success
    }
}
