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

    func send(_ update: AssetPackManager.DownloadStatusUpdate) {
        var ended: [AsyncStream<AssetPackManager.DownloadStatusUpdate>.Continuation] = []
        listeners.withLock { list in
            for l in list where l.id == nil || l.id == update.assetPack.id { l.continuation.yield(update) }
            list.removeAll { l in
                guard l.id != nil, l.id == update.assetPack.id else { return false }
                switch update {
                case .finished, .failed:
                    ended.append(l.continuation)
                    return true
                default: return false
                }
            }
        }
        // Finished outside the lock: finishing runs onTermination, which takes it.
        for c in ended { c.finish() }
    }
}
