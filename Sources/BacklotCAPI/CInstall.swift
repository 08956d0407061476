import BacklotBasics
import BacklotClient
import CBacklot
import Foundation

/// `backlot_ensure_local_availability` and `backlot_ensure_latest_availability`.
enum CInstall {
    /// Installs a pack (unless one is installed and `latest` is false), blocking, with progress
    /// callbacks on the calling thread.
    static func ensure(
        _ handle: OpaquePointer?, _ packID: UnsafePointer<CChar>?, latest: Bool, _ progress: backlot_progress_fn?,
        _ context: CContext
    ) throws {
        let m = try manager(handle)
        let id = try CMemory.string(packID, "pack_id")
        let client = m.manager
        if !latest, client.assetPackIsAvailableLocally(withID: id) {
            progress?(context.pointer, 0, 0)
            return
        }
        let finishedBefore = m.finishedDownloads(of: id).count
        var last: (completed: UInt64, total: UInt64)? = nil
        var lastCall = ContinuousClock.now
        let report: () -> Void = {
            guard let progress else { return }
            // As bytes are installed, and at least once a second even when nothing moved: a
            // binding's only chance to run code on this thread (Python's Ctrl-C) while it waits.
            let now = m.progress(of: id) ?? last ?? (0, 0)
            if let last, last == now, ContinuousClock.now - lastCall < .seconds(1) { return }
            if last == nil, now == (0, 0), ContinuousClock.now - lastCall < .seconds(1) { return }
            if m.progress(of: id) != nil { last = now }
            lastCall = .now
            progress(context.pointer, now.completed, now.total)
        }
        let fetched = try m.waitingFor(id) {
            try BlockingPool.waitForAsync(
                polling: progress == nil ? nil : report, cancelledWhen: { m.isCancelRequested(id) }
            ) {
                try await client.fetch(packWithID: id)
            }
        }
        var total = last?.total ?? 0
        if progress != nil, last == nil, fetched.downloadedChunks + fetched.reusedChunks + fetched.linkedFiles > 0 {
            // A download over before the first poll: its size comes with the status update that
            // ended it, which may arrive just after the call returned (wait 200 ms at most).
            let deadline = ContinuousClock.now + .milliseconds(200)
            while m.finishedDownloads(of: id).count == finishedBefore, ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.005)
            }
            let ended = m.finishedDownloads(of: id)
            total = ended.count > finishedBefore ? ended.total : 0
        }
        if last.map({ $0.completed != total }) ?? true { progress?(context.pointer, total, total) }
    }
}
