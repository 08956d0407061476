import BacklotClient
import Foundation
import Synchronization

/// Where a test delegate's download lands: the file moved to `destination`, how it ended
/// ("finished" or "failed: …"), and a semaphore signalled then. The challenge tests' delegates
/// answer differently and end alike.
final class DownloadLanding: Sendable {
    let destination: String
    let outcome = Mutex<String?>(nil)
    let done = DispatchSemaphore(value: 0)

    init(destination: String) { self.destination = destination }

    func finished(_ fileURL: URL) {
        try? FileManager.default.moveItem(atPath: fileURL.path, toPath: destination)
        outcome.withLock { $0 = "finished" }
        done.signal()
    }

    func failed(_ error: any Error) {
        outcome.withLock { $0 = "failed: \(error)" }
        done.signal()
    }
}
