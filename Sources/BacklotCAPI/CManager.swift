import BacklotBasics
import BacklotClient
import Foundation
import Synchronization

/// What a `backlot_manager *` stands for: the client's ``AssetPackManager`` over one container,
/// its URL downloads (``BADownloadManager``, made when first used), the subscriptions, and the
/// progress of the downloads running, which is what cancelling and progress callbacks act on.
final class CManager: Sendable {
    let manager: AssetPackManager
    let configuration: AssetPackManager.Configuration
    private let downloadsManager = Mutex<BADownloadManager?>(nil)
    /// The delegate given to the URL downloads (the download manager holds it weakly).
    let delegate = Mutex<CDownloadDelegate?>(nil)
    /// The progress of each pack's running download, from the manager's status updates.
    private let progress = Mutex<[String: Progress]>([:])
    /// The byte counts each pack's last download ended with (what a caller that never saw the
    /// download running is told at the end).
    private let finished = Mutex<[String: (count: Int, total: UInt64)]>([:])
    /// Packs whose download was cancelled before its progress was known: cancelled once it is.
    private let cancelRequested = Mutex<Set<String>>([])
    /// How many C calls are waiting for each pack (a cancel request lasts while one is).
    private let waiting = Mutex<[String: Int]>([:])
    let subscriptions = Mutex<(next: UInt64, open: [UInt64: CSubscription])>((1, [:]))
    private let watcher = Mutex<Task<Void, Never>?>(nil)
    private let closed = Atomic<Bool>(false)

    init(configuration: AssetPackManager.Configuration) throws {
        self.configuration = configuration
        manager = try AssetPackManager(configuration: configuration)
        let updates = manager.statusUpdates
        let task = Task { [weak self] in
            for await update in updates {
                guard let self else { return }
                self.observe(update)
            }
        }
        watcher.withLock { $0 = task }
    }

    var isClosed: Bool { closed.load(ordering: .acquiring) }

    /// Records a running download's progress, and cancels it at once if that was asked for.
    private func observe(_ update: AssetPackManager.DownloadStatusUpdate) {
        switch update {
        case .downloading(let pack, let p):
            progress.withLock { $0[pack.id] = p }
            if isClosed || cancelRequested.withLock({ $0.contains(pack.id) }) { p.cancel() }
        case .finished(let pack):
            if let p = progress.withLock({ $0.removeValue(forKey: pack.id) }) {
                let total = UInt64(clamping: max(0, p.totalUnitCount))
                finished.withLock { $0[pack.id] = (($0[pack.id]?.count ?? 0) + 1, total) }
            }
        case .failed(let pack, _):
            progress.withLock { $0[pack.id] = nil }
        default:
            break
        }
    }

    /// The bytes installed so far and in all of a pack's running download, nil when none runs.
    func progress(of id: String) -> (completed: UInt64, total: UInt64)? {
        guard let p = progress.withLock({ $0[id] }) else { return nil }
        return (UInt64(clamping: max(0, p.completedUnitCount)), UInt64(clamping: max(0, p.totalUnitCount)))
    }

    /// How many downloads of the pack finished, and the size the last one installed.
    func finishedDownloads(of id: String) -> (count: Int, total: UInt64) {
        finished.withLock { $0[id] } ?? (0, 0)
    }

    /// Cancels a pack's running download, or the next one that starts while a call waits for it.
    func cancel(_ id: String) {
        if waiting.withLock({ ($0[id] ?? 0) > 0 }) { cancelRequested.withLock { _ = $0.insert(id) } }
        progress.withLock { $0[id] }?.cancel()
    }

    /// Whether a call waiting for pack `id` is to end: the handle is closed, or the pack's
    /// download was cancelled (which also reaches one queued behind another process's).
    func isCancelRequested(_ id: String) -> Bool {
        isClosed || cancelRequested.withLock { $0.contains(id) }
    }

    /// Runs `body` as a call waiting for pack `id` (so that a cancel of it reaches a download that
    /// has not started yet); the cancel request ends with the last such call.
    func waitingFor<T>(_ id: String, _ body: () throws -> T) throws -> T {
        waiting.withLock { $0[id, default: 0] += 1 }
        defer {
            let last = waiting.withLock { w -> Bool in
                w[id, default: 1] -= 1
                if w[id] == 0 {
                    w[id] = nil
                    return true
                }
                return false
            }
            if last { cancelRequested.withLock { _ = $0.remove(id) } }
        }
        return try body()
    }

    /// The URL download manager of the container, made on first use.
    func downloads() throws -> BADownloadManager {
        try downloadsManager.withLock { existing in
            if let existing { return existing }
            let made = try BADownloadManager(
                containerPath: configuration.containerPath, caFile: configuration.caFile)
            existing = made
            return made
        }
    }

    /// Ends everything the handle started: running downloads are cancelled, subscriptions end,
    /// the delegate is removed. Calls still running on other threads return soon.
    func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for p in progress.withLock({ Array($0.values) }) { p.cancel() }
        watcher.withLock { $0?.cancel() }
        let open = subscriptions.withLock { s -> [CSubscription] in
            defer { s.open = [:] }
            return Array(s.open.values)
        }
        for s in open { s.end() }
        if let downloads = downloadsManager.withLock({ $0 }) { downloads.delegate = nil }
        delegate.withLock { slot -> CDownloadDelegate? in
            defer { slot = nil }
            return slot
        }?.retire()
    }
}
