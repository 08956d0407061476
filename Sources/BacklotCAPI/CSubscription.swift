import BacklotClient
import CBacklot
import Dispatch
import Foundation
import Synchronization

/// One `backlot_subscribe`: the manager's status updates (of one pack, or all), handed to a C
/// callback in order on one thread of its own that lives as long as the subscription, with a
/// `DOWNLOADING` update again each time a running download's byte count moves (polled every
/// 100 ms while one runs). One long-lived thread, not a dispatch queue's passing workers: runtimes
/// that attach every native thread that calls into them (Mono, the JVM) pay for each new thread,
/// and some deadlock when one exits during a collection.
final class CSubscription: Sendable {
    typealias Callback = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<backlot_status_update>?) -> Void

    private let packID: String?
    private let callback: Callback
    private let context: CContext
    /// Updates not yet delivered, and whether the subscription ended.
    private let inbox = Mutex<(updates: [AssetPackManager.DownloadStatusUpdate], ended: Bool)>(([], false))
    private let ended = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled once the delivering thread has left its loop (no callback runs after that).
    private let stopped = DispatchSemaphore(value: 0)
    private let task = Mutex<Task<Void, Never>?>(nil)
    /// Downloads running, with their progress and the byte count last sent.
    private let running = Mutex<[String: (progress: Progress, sent: Int64)]>([:])
    /// This subscription's number, which its thread carries in its thread dictionary.
    private let number = CSubscription.numbers.wrappingAdd(1, ordering: .relaxed).oldValue
    private static let numbers = Atomic<UInt64>(1)
    private static let threadKey = "org.backlot.capi.subscription"

    init(manager: AssetPackManager, packID: String?, callback: @escaping Callback, context: CContext) {
        self.packID = packID
        self.callback = callback
        self.context = context
        let thread = Thread { [self] in deliverUntilEnded() }
        thread.name = "backlot subscription \(number)"
        thread.start()
        let updates = manager.statusUpdates
        let started = Task { [weak self] in
            for await update in updates {
                guard let self, !self.ended.load(ordering: .acquiring) else { return }
                if let id = self.packID, update.assetPack.id != id { continue }
                self.inbox.withLock { $0.updates.append(update) }
                self.wake.signal()
            }
        }
        task.withLock { $0 = started }
    }

    /// Stops the callbacks: once this returns none runs again, unless it is called from this
    /// subscription's callback (which then finishes normally, and no other follows).
    func end() {
        guard !ended.exchange(true, ordering: .acquiringAndReleasing) else { return }
        inbox.withLock { $0.ended = true }
        task.withLock { $0?.cancel() }
        wake.signal()
        if (Thread.current.threadDictionary[Self.threadKey] as? UInt64) != number { stopped.wait() }
    }

    /// The subscription's thread: waits for updates (or, while downloads run, for the next poll).
    private func deliverUntilEnded() {
        Thread.current.threadDictionary[Self.threadKey] = number
        defer { stopped.signal() }
        while true {
            let polling = running.withLock { !$0.isEmpty }
            _ = wake.wait(timeout: polling ? .now() + .milliseconds(100) : .distantFuture)
            let (batch, over) = inbox.withLock { box -> ([AssetPackManager.DownloadStatusUpdate], Bool) in
                defer { box.updates = [] }
                return (box.updates, box.ended)
            }
            if over { return }
            for update in batch { deliver(update) }
            poll()
        }
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

    /// A `DOWNLOADING` update for each running download whose count moved since the last one.
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
