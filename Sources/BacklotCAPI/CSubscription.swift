import BacklotClient
import CBacklot
import Dispatch
import Foundation
import Synchronization

/// One `backlot_subscribe`: the manager's status updates (of one pack, or all), handed to a C
/// callback in order on a serial queue of its own, with a `DOWNLOADING` update again each time a
/// running download's byte count moves (polled every 100 ms while one runs).
final class CSubscription: Sendable {
    typealias Callback = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<backlot_status_update>?) -> Void

    private let packID: String?
    private let callback: Callback
    private let context: CContext
    private let queue = DispatchQueue(label: "org.backlot.capi.subscription")
    /// Which subscription's queue a thread is running: each queue carries its own number, so that
    /// ending one subscription from another's callback still waits for the first's callback.
    private static let onQueue = DispatchSpecificKey<UInt64>()
    private static let numbers = Atomic<UInt64>(1)
    private let number = CSubscription.numbers.wrappingAdd(1, ordering: .relaxed).oldValue
    private let ended = Atomic<Bool>(false)
    private let task = Mutex<Task<Void, Never>?>(nil)
    /// Downloads running, with the progress and the byte count last sent (used on `queue` only,
    /// behind a lock all the same so the type is checked).
    private let running = Mutex<[String: (progress: Progress, sent: Int64)]>([:])
    private let timer = Mutex<(any DispatchSourceTimer)?>(nil)

    init(manager: AssetPackManager, packID: String?, callback: @escaping Callback, context: CContext) {
        self.packID = packID
        self.callback = callback
        self.context = context
        queue.setSpecific(key: Self.onQueue, value: number)
        let updates = manager.statusUpdates
        let started = Task { [weak self] in
            for await update in updates {
                guard let self, !self.ended.load(ordering: .acquiring) else { return }
                if let id = self.packID, update.assetPack.id != id { continue }
                self.queue.async { self.deliver(update) }
            }
        }
        task.withLock { $0 = started }
    }

    /// Stops the callbacks: once this returns none runs again, unless it is called from the
    /// callback itself (which then finishes normally).
    func end() {
        guard !ended.exchange(true, ordering: .acquiringAndReleasing) else { return }
        task.withLock { $0?.cancel() }
        timer.withLock { t in
            t?.cancel()
            t = nil
        }
        if DispatchQueue.getSpecific(key: Self.onQueue) != number { queue.sync {} }
    }

    private func deliver(_ update: AssetPackManager.DownloadStatusUpdate) {
        let id = update.assetPack.id
        switch update {
        case .began: send(kind: BACKLOT_UPDATE_BEGAN, id)
        case .paused: send(kind: BACKLOT_UPDATE_PAUSED, id)
        case .downloading(_, let progress):
            let completed = progress.completedUnitCount
            running.withLock { $0[id] = (progress, completed) }
            send(kind: BACKLOT_UPDATE_DOWNLOADING, id, completed: completed, total: progress.totalUnitCount)
            startPolling()
        case .finished:
            let last = running.withLock { $0.removeValue(forKey: id) }
            let total = last?.progress.totalUnitCount ?? 0
            send(kind: BACKLOT_UPDATE_FINISHED, id, completed: total, total: total)
        case .failed(_, let error):
            running.withLock { _ = $0.removeValue(forKey: id) }
            let (status, message) = CStatus.of(error)
            send(kind: BACKLOT_UPDATE_FAILED, id, error: status, message: message)
        }
    }

    /// Every 100 ms while downloads run: a `DOWNLOADING` update for each whose count moved.
    private func startPolling() {
        timer.withLock { t in
            guard t == nil, !ended.load(ordering: .acquiring) else { return }
            let source = DispatchSource.makeTimerSource(queue: queue)
            source.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
            source.setEventHandler { [weak self] in self?.poll() }
            source.resume()
            t = source
        }
    }

    private func poll() {
        let moved = running.withLock { r -> [(String, Int64, Int64)] in
            var out: [(String, Int64, Int64)] = []
            for (id, entry) in r where entry.progress.completedUnitCount != entry.sent {
                let now = entry.progress.completedUnitCount
                r[id] = (entry.progress, now)
                out.append((id, now, entry.progress.totalUnitCount))
            }
            return out
        }
        for (id, completed, total) in moved.sorted(by: { $0.0 < $1.0 }) {
            send(kind: BACKLOT_UPDATE_DOWNLOADING, id, completed: completed, total: total)
        }
        if running.withLock({ $0.isEmpty }) {
            timer.withLock { t in
                t?.cancel()
                t = nil
            }
        }
    }

    private func send(
        kind: Int, _ id: String, completed: Int64 = 0, total: Int64 = 0, error: backlot_status = CStatus.ok,
        message: String = ""
    ) {
        guard !ended.load(ordering: .acquiring) else { return }
        id.withCString { idPointer in
            message.withCString { messagePointer in
                var update = backlot_status_update(
                    size: MemoryLayout<backlot_status_update>.size, kind: Int32(kind), pack_id: idPointer,
                    completed_bytes: UInt64(clamping: max(0, completed)), total_bytes: UInt64(clamping: max(0, total)),
                    error: error, error_message: messagePointer)
                callback(context.pointer, &update)
            }
        }
    }
}
