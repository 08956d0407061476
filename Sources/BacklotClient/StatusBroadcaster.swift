import Synchronization

/// Fans status updates out to every stream that listens.
final class Broadcaster: Sendable {
    private let listeners = Mutex<
        [(id: String?, continuation: AsyncStream<AssetPackManager.DownloadStatusUpdate>.Continuation)]
    >([])

    func stream(for id: String?) -> AsyncStream<AssetPackManager.DownloadStatusUpdate> {
        AsyncStream { continuation in listeners.withLock { $0.append((id, continuation)) } }
    }

    func send(_ update: AssetPackManager.DownloadStatusUpdate) {
        listeners.withLock { list in
            for l in list where l.id == nil || l.id == update.assetPack.id {
                l.continuation.yield(update)
                if l.id != nil, case .finished = update { l.continuation.finish() }
                if l.id != nil, case .failed = update { l.continuation.finish() }
            }
            list.removeAll { l in
                guard l.id != nil, l.id == update.assetPack.id else { return false }
                if case .finished = update { return true }
                if case .failed = update { return true }
                return false
            }
        }
    }
}
