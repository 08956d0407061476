import BacklotBasics
import BacklotClient
import BacklotContainer
import BacklotExtension
import BacklotFormat
import BacklotTaskScheduler
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Where the outcome of a URL download the agent ran goes: the app or the extension.
extension Agent {
    /// Decided under the exclusive lock: to the app if it listens (or there is no extension),
    /// else to the extension. For the extension, the outcome is posted *reserved* (its file moved
    /// aside) and the extension runs after the lock is released, one call at a time; when it has
    /// taken it, the reservation is closed, and when it cannot (its budget is used up, it fails, the
    /// agent stops or crashes first), the outcome goes to the app instead. Nothing is lost and
    /// nothing is delivered twice.
    static func route(
        _ event: DownloadManager.Event, manager: DownloadManager, runner: ExtensionRunner?, handoffs: DispatchGroup,
        log: @escaping @Sendable (String) -> Void
    ) {
        let d: URLDownload
        let call: (String, Int64) -> ExtensionCall
        let what: String
        switch event {
        case .began(let download):
            log("download \(download.identifier): started")
            return
        case .paused(let download):
            log("download \(download.identifier): paused (the connection failed); it goes on later")
            return
        case .progress:
            return
        case .finished(let download, _):
            d = download
            call = { path, seq in .finished(download, filePath: path, outcome: seq) }
            what = "finished"
        case .failed(let download, let error):
            d = download
            let code = (error as? BackgroundDownloadError)?.code ?? (error as? DownloadManager.DeliveredError)?.code
            call = { _, seq in .failed(download, message: "\(error)", code: code, outcome: seq) }
            what = "failed (\(error))"
        }
        if manager.appIsListening || runner == nil {
            do {
                try manager.postToApp(event)
                TestStopPoint.reach("handover.afterPost")
                log("download \(d.identifier): \(what), handed to the app")
            } catch {
                log("download \(d.identifier): \(what), but it could not be handed to the app: \(error)")
            }
            return
        }
        guard let runner else { return }
        let seq: Int64
        do {
            seq = try manager.postToApp(event, reservedForExtension: true)
        } catch {
            log("download \(d.identifier): \(what), but it could not be kept for the extension: \(error)")
            return
        }
        TestStopPoint.reach("handover.afterPost")
        let extensionCall = call(manager.postedFile(seq)?.path ?? "", seq)
        // The extension's call blocks for as long as the extension takes (its budget bounds it).
        BlockingPool.longRunning.submit(countedBy: handoffs) {
            do {
                TestStopPoint.reach("handover.beforeExtension", parksOnTerm: false)
                _ = try runner.call(extensionCall, bypassBudget: false)
                TestStopPoint.reach("handover.afterExtension", parksOnTerm: false)
                try manager.completeReservation(seq, deliveredToExtension: true)
                log("download \(d.identifier): \(what), handed to the extension")
            } catch {
                try? manager.completeReservation(seq, deliveredToExtension: false)
                log(
                    "download \(d.identifier): \(what); the extension could not take it (\(error)), so it waits for the app"
                )
            }
        }
    }
}
