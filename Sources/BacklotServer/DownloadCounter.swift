import BacklotBasics
import BacklotFormat
import BacklotProtocol
import BacklotRepository
import Foundation
import Synchronization

/// Counts the published tree's successful responses (2xx and 206) per path and UTC day in
/// memory, and hands them to the metadata store in batches (``DownloadCounts/add(_:)``):
/// every few seconds and at stop. Per request, one dictionary update under a lock: the key is
/// the request's own path string (no copy), classified only when flushed.
///
/// ```swift
/// let counter = DownloadCounter(repository: repo, every: 5)
/// counter.record(path: "/v1/keys/root.json", status: 200, bytes: 512)
/// counter.flush()
/// ```
public final class DownloadCounter: Sendable {
    struct Key: Hashable {
        let path: String
        let day: Int64
        /// The app the client named (``PublishedTreeLayout/appHeader``), when it is a valid ID.
        let app: String?
    }
    /// Past this many distinct keys between flushes, the app a client names is not kept apart
    /// (a client cannot grow the table by naming apps).
    static let keysWithApps = 50_000
    private let counts = Mutex<[Key: (requests: Int64, bytes: Int64)]>([:])
    let repository: Repository
    private let timer = Mutex<RepeatingTimer?>(nil)
    /// Flushes run one at a time (the timer's and a stop's).
    private let flushing = Mutex(())

    /// - Parameter every: seconds between flushes (nil: only when ``flush()`` is called).
    public init(repository: Repository, every interval: Double? = 5) {
        self.repository = repository
        if let interval {
            let t = RepeatingTimer(label: "backlot.downloads", every: interval) { [weak self] in self?.flush() }
            timer.withLock { $0 = t }
        }
    }

    /// Counts one response of the published tree (others than 2xx are ignored).
    /// - Parameter app: the app the client named (the `Backlot-App` header), credited for an
    ///   archive two apps share; ignored unless it is a valid app ID.
    public func record(
        path: String, app: String? = nil, status: Int, bytes: UInt64, at time: Double = Date().timeIntervalSince1970
    ) {
        guard (200...299).contains(status) else { return }
        let named = app.flatMap { PackID.problem(with: $0) == nil ? $0 : nil }
        let day = Int64((time / 86_400).rounded(.down))
        let b = Int64(clamping: bytes)
        counts.withLock { counts in
            let key = Key(path: path, day: day, app: counts.count < Self.keysWithApps ? named : nil)
            if let old = counts[key] {
                counts[key] = (old.requests &+ 1, old.bytes &+ b)
            } else {
                counts[key] = (1, b)
            }
        }
    }

    /// Writes what was counted since the last flush to the metadata store. When the store cannot
    /// be reached, the counts are kept for the next flush.
    public func flush() {
        flushing.withLock { _ in
            let taken = counts.withLock { c -> [Key: (requests: Int64, bytes: Int64)] in
                let t = c
                c = [:]
                return t
            }
            guard !taken.isEmpty else { return }
            var hits: [DownloadHit] = []
            for (key, value) in taken {
                guard let target = TreePath.target(key.path, app: key.app) else { continue }
                hits.append(
                    DownloadHit(
                        target, day: DownloadCounts.utcDay(daysSinceEpoch: key.day), requests: value.requests,
                        bytes: value.bytes))
            }
            do {
                try repository.downloads.add(hits)
            } catch {
                counts.withLock { c in
                    for (key, value) in taken {
                        let old = c[key] ?? (0, 0)
                        c[key] = (old.requests &+ value.requests, old.bytes &+ value.bytes)
                    }
                }
            }
        }
    }

    deinit { timer.withLock { $0 }?.cancel() }

    /// Stops the timer and flushes what is left.
    public func stop() {
        let t = timer.withLock { t -> RepeatingTimer? in
            let old = t
            t = nil
            return old
        }
        t?.cancel()
        flush()
    }
}
