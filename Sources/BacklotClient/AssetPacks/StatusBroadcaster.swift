import Foundation
import Synchronization

/// Fans status updates out to every stream that listens. A stream whose consumer went away (its
/// iterating task ended or was cancelled) is dropped from the list.
final class Broadcaster: Sendable {
    private struct Listener {
        let key: UUID
        let id: String?
        let continuation: AsyncStream<AssetPackManager.DownloadStatusUpdate>.Continuation
    }
    private let listeners = Mutex<[Listener]>([])

    func stream(for id: String?) -> AsyncStream<AssetPackManager.DownloadStatusUpdate> {
        AsyncStream { continuation in
            let key = UUID()
            continuation.onTermination = { [weak self] _ in
                self?.listeners.withLock { $0.removeAll { $0.key == key } }
            }
            listeners.withLock { $0.append(Listener(key: key, id: id, continuation: continuation)) }
        }
    }

    /// How many streams listen now.
    var listenerCount: Int { listeners.withLock { $0.count } }

    /// Hands `update` to every stream that listens for it. Nothing is yielded or finished under
    /// the lock: yielding takes the receiving task's own lock, and a task being cancelled holds
    /// that one while its stream's termination handler waits for ours.
    func send(_ update: AssetPackManager.DownloadStatusUpdate) {
        typealias Continuation = AsyncStream<AssetPackManager.DownloadStatusUpdate>.Continuation
        let (targets, ended) = listeners.withLock { list -> ([Continuation], [Continuation]) in
            let targets = list.filter { $0.id == nil || $0.id == update.assetPack.id }.map(\.continuation)
            var ended: [Continuation] = []
            list.removeAll { l in
                guard l.id != nil, l.id == update.assetPack.id else { return false }
                switch update {
                case .finished, .failed:
                    ended.append(l.continuation)
                    return true
                default: return false
                }
            }
            return (targets, ended)
        }
        for c in targets { c.yield(update) }
        for c in ended { c.finish() }
    }
}
