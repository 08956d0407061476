import BacklotClient
import CBacklot
import Foundation
import Synchronization

/// A C `backlot_download_delegate` as the URL download manager's delegate (Apple's
/// `BADownloadManagerDelegate`): each member the caller set is called with its context; the
/// manager calls from a background thread of its own.
final class CDownloadDelegate: BADownloadManagerDelegate, Sendable {
    private let functions: backlot_download_delegate
    private let context: CContext
    /// Calls running now, and whether the delegate was replaced or its manager closed.
    private let state = Mutex<(running: Int, retired: Bool)>((0, false))
    /// The key under which a thread records the calls of this delegate it is inside.
    private var threadKey: String { "org.backlot.capi.delegate.\(UInt(bitPattern: ObjectIdentifier(self).hashValue))" }

    // `functions` holds only C function pointers, immutable after init: safe to share.
    init(_ functions: backlot_download_delegate, context: CContext) {
        self.functions = functions
        self.context = context
    }

    /// Stops the calls: once it returns, none of the caller's functions runs any more (except one
    /// the calling thread is inside, when it retires its own delegate), so the context may go.
    func retire() {
        state.withLock { $0.retired = true }
        let inside = (Thread.current.threadDictionary[threadKey] as? Int) ?? 0
        while state.withLock({ $0.running }) > inside { Thread.sleep(forTimeInterval: 0.001) }
    }

    /// Runs one call of the caller's functions, unless the delegate was retired.
    private func call(_ body: () -> Void) {
        guard
            state.withLock({ s -> Bool in
                guard !s.retired else { return false }
                s.running += 1
                return true
            })
        else { return }
        let key = threadKey
        let dictionary = Thread.current.threadDictionary
        dictionary[key] = ((dictionary[key] as? Int) ?? 0) + 1
        defer {
            dictionary[key] = ((dictionary[key] as? Int) ?? 1) - 1
            state.withLock { $0.running -= 1 }
        }
        body()
    }

    func downloadDidBegin(_ download: BADownload) {
        guard let began = functions.began else { return }
        call { download.identifier.withCString { began(context.pointer, $0) } }
    }

    func downloadDidPause(_ download: BADownload) {
        guard let paused = functions.paused else { return }
        call { download.identifier.withCString { paused(context.pointer, $0) } }
    }

    func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite totalExpectedBytes: Int64
    ) {
        guard let wrote = functions.wrote else { return }
        call {
            download.identifier.withCString {
                wrote(context.pointer, $0, bytesWritten, totalBytesWritten, totalExpectedBytes)
            }
        }
    }

    func download(_ download: BADownload, failedWithError error: any Error) {
        guard let failed = functions.failed else { return }
        let (status, message) = CStatus.of(error)
        call {
            download.identifier.withCString { id in message.withCString { failed(context.pointer, id, status, $0) } }
        }
    }

    func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {
        guard let finished = functions.finished else { return }
        call {
            download.identifier.withCString { id in fileURL.path.withCString { finished(context.pointer, id, $0) } }
        }
    }
}
