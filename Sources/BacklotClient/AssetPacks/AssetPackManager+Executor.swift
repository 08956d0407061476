import BacklotBasics
import BacklotContainer
import BacklotFormat
import BacklotProtocol
import Foundation
import Synchronization

/// The cross-process executor protocol behind ``AssetPackManager/fetch(packWithID:)``: one process
/// per container runs downloads, the others queue requests and claim the outcomes it posts.
extension AssetPackManager {
    /// One process per container runs downloads: the holder of the container's executor lock. It
    /// does its own request, then every request other processes queued, posting each one's outcome
    /// as an event in the container's database. A process that finds the lock held queues its
    /// request and waits for its event (claimed exactly once); if the executor goes away, it takes
    /// the lock and does the work itself.
    func runOrQueue(_ id: String) async throws -> FetchReport {
        if let executor = try? container.layout.acquire(.executor, waiting: false) {
            defer { executor.release() }
            let report = try await download(id)
            await drainQueue()
            return report
        }
        let request = try container.enqueue(client: clientID, pack: id)
        do {
            return try await waitQueued(request, id)
        } catch {
            // Whatever ended the wait — the caller's cancellation (while the catalog was read, or
            // while queued), the pack not offered, the catalog out of reach — the request is taken
            // back, unless the executor took it already (it then finishes it for the container as
            // for anyone).
            _ = try? container.withdraw(request: request)
            throw error
        }
    }

    /// Waits for the executor to do `request` (of pack `id`), or does it once the executor has gone.
    private func waitQueued(_ request: Int64, _ id: String) async throws -> FetchReport {
        guard let (pack, _) = try await offered()[id] else {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: id)
        }
        broadcaster.send(.began(pack))
        broadcaster.send(.paused(pack))  // queued behind the process that runs this container's downloads
        while true {
            if let event = try container.claim(client: clientID, pack: id) {
                return try finish(pack, event)
            }
            if let executor = try? container.layout.acquire(.executor, waiting: false) {
                defer { executor.release() }
                if try container.withdraw(request: request) {
                    let report = try await download(id)
                    await drainQueue()
                    return report
                }
                // The executor took the request before leaving: its event is there, or it died mid-way.
                if let event = try container.claim(client: clientID, pack: id) { return try finish(pack, event) }
                let report = try await download(id)
                await drainQueue()
                return report
            }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
    }

    func finish(_ pack: AssetPack, _ outcome: FetchOutcome) throws -> FetchReport {
        switch outcome {
        case .finished(let report):
            broadcaster.send(.finished(pack))
            return report
        case .failed(let message):
            let error = BacklotError(.io, message, context: pack.id)
            broadcaster.send(.failed(pack, error))
            throw error
        }
    }

    /// Installs `release` of pack `id` under the pack's install lock, on the calling thread (it
    /// blocks for as long as the transfer takes): the one path by which a pack is installed.
    /// Nothing when another process installed it while this one waited for the lock, unless
    /// `repairing` (the installed release is that one, damaged: ``repair()``).
    nonisolated func install(
        _ id: String, _ release: Catalog.Release, from url: URL, with installer: PackInstaller,
        progress box: ProgressBox, repairing: Bool = false
    ) throws -> FetchReport {
        let outcome = try container.layout.holding(.install(pack: id)) { () -> PackInstaller.Outcome? in
            if !repairing, (try? container.installed(id))?.digest == installedName(release) { return nil }
            return try installer.install(
                id: id, release: release, archiveURL: url, repairing: repairing,
                progress: { done, total in
                    box.progress.totalUnitCount = Int64(max(1, total))
                    box.progress.completedUnitCount = Int64(done)
                }, isCancelled: { box.progress.isCancelled })
        }
        return FetchReport(
            id: id, version: release.version, downloadedBytes: outcome?.downloadedBytes ?? 0,
            downloadedChunks: outcome?.downloadedChunks ?? 0,
            reusedChunks: outcome?.reusedChunks ?? 0, linkedFiles: outcome?.linkedFiles ?? 0,
            peerBytes: outcome?.peerBytes ?? 0, peerChunks: outcome?.peerChunks ?? 0,
            bannedPeers: outcome?.bannedPeers ?? [:])
    }

    /// The executor's second duty: the requests other processes queued. A cancelled task takes
    /// none (they stay queued for the next executor).
    func drainQueue() async {
        while !Task.isCancelled, let request = try? container.takeRequest() {
            do {
                let report = try await download(request.pack)
                try? container.post(client: request.client, pack: request.pack, outcome: .finished(report))
            } catch {
                try? container.post(client: request.client, pack: request.pack, outcome: .failed(message: "\(error)"))
            }
        }
    }

    func download(_ id: String) async throws -> FetchReport {
        guard let (pack, release) = try await offered()[id] else {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: id)
        }
        if (try? container.installed(id))?.digest == installedName(release) {
            return FetchReport(
                id: id, version: release.version, downloadedBytes: 0, downloadedChunks: 0, reusedChunks: 0,
                linkedFiles: 0)
        }
        let url = try catalogClient.archiveURL(release)
        let progress = Progress(totalUnitCount: Int64(max(1, release.installSize)))
        broadcaster.send(.began(pack))
        broadcaster.send(.downloading(pack, progress))
        var installer = makeInstaller()
        if configuration.peers.isEnabled {
            let directory = configuration.peers
            installer.peers = try await BlockingPool.longRunning.run { directory.peers().peers }
            installer.peerDeadline = Int(min(86_400, max(1, directory.answerDeadline.inSeconds.rounded(.up))))
        }
        let box = ProgressBox(progress)
        let broadcaster = self.broadcaster
        reporter.record(.started, pack: id, version: release.version)
        do {
            let report = try await BlockingPool.longRunning.run { [installer] in
                try self.install(id, release, from: url, with: installer, progress: box)
            }
            broadcaster.send(.finished(pack))
            reporter.record(.finished, pack: id, version: release.version)
            return report
        } catch {
            broadcaster.send(.failed(pack, error))
            // A download the app cancelled is no failure of the release.
            if !(error is CancellationError) && !box.progress.isCancelled {
                reporter.record(.failed, pack: id, version: release.version)
            }
            throw error
        }
    }
}
