import BacklotClient
import CBacklot
import Foundation

/// A C `backlot_download_delegate` as the URL download manager's delegate (Apple's
/// `BADownloadManagerDelegate`): each member the caller set is called with its context; the
/// manager calls from a background thread of its own.
final class CDownloadDelegate: BADownloadManagerDelegate, Sendable {
    private let functions: backlot_download_delegate
    private let context: CContext

    // `functions` holds only C function pointers, immutable after init: safe to share.
    init(_ functions: backlot_download_delegate, context: CContext) {
        self.functions = functions
        self.context = context
    }

    func downloadDidBegin(_ download: BADownload) {
        guard let began = functions.began else { return }
        download.identifier.withCString { began(context.pointer, $0) }
    }

    func downloadDidPause(_ download: BADownload) {
        guard let paused = functions.paused else { return }
        download.identifier.withCString { paused(context.pointer, $0) }
    }

    func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite totalExpectedBytes: Int64
    ) {
        guard let wrote = functions.wrote else { return }
        download.identifier.withCString {
            wrote(context.pointer, $0, bytesWritten, totalBytesWritten, totalExpectedBytes)
        }
    }

    func download(_ download: BADownload, failedWithError error: any Error) {
        guard let failed = functions.failed else { return }
        let (status, message) = CStatus.of(error)
        download.identifier.withCString { id in message.withCString { failed(context.pointer, id, status, $0) } }
    }

    func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {
        guard let finished = functions.finished else { return }
        download.identifier.withCString { id in fileURL.path.withCString { finished(context.pointer, id, $0) } }
    }
}
