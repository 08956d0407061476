import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotHTTPClient
import BacklotProtocol
import BacklotZstd
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Installs one release of a pack into a container, downloading only what it lacks, in five
/// phases, each in a file of its own:
///
/// 1. **Plan** (PackInstaller+Plan.swift): the archive's header and index, read by Range (or
///    rebuilt from a delta's prefix) and checked against the catalog; mix-and-match is refused.
/// 2. **Reuse** (PackInstaller+Reuse.swift): files that did not change are hard-linked from the
///    installed release; chunks that release (or an attempt cut short) already has are taken from
///    its files, each re-hashed before use.
/// 3. **Fetch** (PackInstaller+Fetch.swift, PackInstaller+Deltas.swift): chunks a delta can
///    rebuild from local ones are, the rest are downloaded as Range requests over runs of adjacent
///    chunks, several at once; every chunk is decompressed into a buffer of its declared size and
///    checked against its SHA-256 before it is written, and progress is recorded in the
///    container's database, so after a crash only chunks that were in flight are fetched again.
/// 4. **Assemble** (``OpenFiles``, while chunks arrive): each file is checked against its SHA-256
///    and made read-only when its last chunk is written; then the file system is flushed once.
/// 5. **Commit** (PackInstaller+Commit.swift): one rename switches to the new release (readers see
///    the old release until the new one is complete), then the container records it and the old
///    release and unfinished attempts are removed.
struct PackInstaller: Sendable {
    let container: ClientContainer
    let http: HTTPClient
    var connections = 4
    var maximumRangeBytes: UInt64 = 2 << 20
    /// The largest gap between two missing chunks fetched (and thrown away) to save a request:
    /// about what a separate request costs in headers both ways. The installer keeps
    /// ``connections`` requests in flight, so a larger gap would buy back little time for bytes
    /// that a metered device pays for (a gap of 64 KiB tripled an update of small files).
    var mergeGap: UInt64 = 2 << 10
    /// Attempts after the first for one Range request.
    var retries = 4
    /// What picks the variant of a pack with variants this device installs (docs/format.md §3.2).
    var profile = DeviceProfile.detected
    /// LAN peer caches asked for chunks before the origin (``fetchWithPeers(_:_:_:files:id:progress:isCancelled:)``).
    var peers: [URL] = []
    /// Seconds a peer has to connect and start answering (and the least rate it must keep, 1 MiB/s):
    /// past it, the chunk goes to another source and the peer is not asked again in this install
    /// (``PeerDirectory/answerDeadline``).
    var peerDeadline = 2
    /// Chunk requests to peers in flight at once, in all (a peer cache takes 8 connections from
    /// one address).
    var peerConnections = 8

    struct Outcome: Sendable {
        /// Bytes fetched from the network (header, index and chunks).
        let downloadedBytes: UInt64
        let reusedChunks: Int
        let downloadedChunks: Int
        let linkedFiles: Int
        /// Of the bytes downloaded, those read from a delta file (its prefix and frames), and the
        /// chunks rebuilt from it (each checked against its ID; ``downloadedChunks`` counts the others).
        var deltaBytes: UInt64 = 0
        var deltaChunks = 0
        /// Bytes and chunks that came from LAN peers (each checked against its ID); not in
        /// ``downloadedBytes``, which counts the origin's.
        var peerBytes: UInt64 = 0
        var peerChunks = 0
        /// Peers dropped during the install, and why.
        var bannedPeers: [String: String] = [:]
    }

    /// Installs `release` of pack `id` from `archiveURL`, the five phases in turn.
    /// - Parameter repairing: rebuild the release even if it is the installed one (damaged files are
    ///   assembled again from intact local chunks and downloads).
    func install(
        id: String, release: Catalog.Release, archiveURL: URL, repairing: Bool = false,
        progress: (@Sendable (UInt64, UInt64) -> Void)? = nil,
        isCancelled: @escaping @Sendable () -> Bool = { false }
    ) throws -> Outcome {
        let previous = try container.installed(id)
        if previous?.digest == ReleaseName.of(release, profile: profile) && !repairing {
            return Outcome(downloadedBytes: 0, reusedChunks: 0, downloadedChunks: 0, linkedFiles: 0)
        }
        // Phases 1–4 in a function of their own: the decoded index and every table made from it
        // are let go when it returns, before the commit reads the index's bytes back and the
        // database copies them (200,000 files: 40 MB, which the commit no longer adds to).
        let assembled = try assemble(
            id: id, release: release, archiveURL: archiveURL, previous: previous, repairing: repairing,
            progress: progress, isCancelled: isCancelled)
        // What they freed goes back to the kernel before the commit adds its own (in the device's
        // processes only: `MemoryArenas.keepSmallForDevice()`).
        MemoryArenas.giveBackFreedMemory()
        try commit(id: id, release: release, assembled, previous: previous)
        try? container.recordDeltaUse(
            id, digest: assembled.digest, bytes: assembled.outcome.deltaBytes, chunks: assembled.outcome.deltaChunks)
        return assembled.outcome
    }

    /// What phases 1–4 leave for the commit: a complete, checked, flushed release folder.
    struct AssembledRelease {
        let url: String
        let digest: String
        /// The release folder as assembled (`DIGEST.partial`).
        let partial: String
        /// The pack's metadata as the container records it.
        let metadata: String
        let storedIndexFile: String
        let outcome: Outcome
    }

    /// Phases 1–4: plan, reuse, fetch, assemble.
    private func assemble(
        id: String, release: Catalog.Release, archiveURL: URL, previous: ClientContainer.Installed?,
        repairing: Bool, progress: (@Sendable (UInt64, UInt64) -> Void)?,
        isCancelled: @escaping @Sendable () -> Bool
    ) throws -> AssembledRelease {
        let plan = try verifiedRelease(
            id: id, release: release, archiveURL: archiveURL, previous: repairing ? nil : previous)
        TestStopPoint.reach("install.afterPlan")
        let folder = try prepareFolder(id: id, plan, previous: previous)
        let files = OpenFiles(
            folder: folder.partial, beneath: folder.release, files: plan.index.files,
            placements: folder.placements.perFile,
            chunks: plan.index.chunks, source: plan.url)
        defer { files.closeAll() }
        var sources = try reuseChunks(plan, folder, files: files)
        // What checking and planning freed (the index's decoding) goes back before the transfers.
        MemoryArenas.giveBackFreedMemory()

        var deltaBytes = UInt64(plan.delta?.prefixBytes ?? 0)
        var deltaChunks = 0
        if let delta = plan.delta, !sources.viaDelta.isEmpty {
            let result = try applyDelta(
                delta, sources.viaDelta, localChunks: folder.localChunks, placements: folder.placements, files: files,
                digest: plan.digest, isCancelled: isCancelled)
            deltaBytes += result.bytes
            deltaChunks = sources.viaDelta.count - result.fallback.count
            sources.missing = (sources.missing + result.fallback).sorted()
        }
        let tally: TransferTally
        if !peers.isEmpty && !sources.missing.isEmpty {
            tally = try fetchWithPeers(
                sources.missing, plan, folder, files: files, id: id, progress: progress, isCancelled: isCancelled)
        } else {
            let fetched = try fetchChunks(
                sources.missing, plan, folder, files: files, id: id, progress: progress, isCancelled: isCancelled)
            tally = TransferTally(originBytes: fetched, originChunks: sources.missing.count)
        }

        try finishAssembly(plan, folder, files: files)
        return AssembledRelease(
            url: plan.url, digest: plan.digest, partial: folder.partial,
            metadata: plan.index.metadata.json.serialized(), storedIndexFile: plan.storedIndexFile,
            outcome: Outcome(
                downloadedBytes: plan.downloadedBytes + deltaBytes + tally.originBytes, reusedChunks: sources.reused,
                downloadedChunks: tally.originChunks, linkedFiles: folder.linked.count, deltaBytes: deltaBytes,
                deltaChunks: deltaChunks, peerBytes: tally.peerBytes, peerChunks: tally.peerChunks,
                bannedPeers: tally.bannedPeers))
    }

    /// Runs `body(i)` for each `i` in `0..<count` on a thread each (``BlockingPool/longRunning``) and returns when all have
    /// returned: the download workers of the fetch phases (origin, delta, peers), whose requests
    /// wait on the network, which `concurrentPerform` would run one per core at most (two on a
    /// 2-core machine, whatever ``connections`` says; one at a time when nested in another).
    static func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        for i in 0..<count {
            BlockingPool.longRunning.submit(countedBy: group) {
                body(i)
            }
        }
        group.wait()
    }

}
