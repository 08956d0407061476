import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotProtocol
import BacklotZstd
import Dispatch
import Foundation
import Synchronization

/// A delta the installer uses: where it is, the entries of its table by target chunk, and the
/// index it rebuilt (nil: read the index from the archive).
struct DeltaPlan: Sendable {
    let url: String
    let entries: [SHA256Digest: PackDelta.Entry]
    let index: [UInt8]?
    let prefixBytes: Int
}

extension PackInstaller {
    /// The delta into `release` from the installed version, when the catalog lists one: its prefix
    /// read with one Range request and checked (docs/format.md §14), and the index rebuilt from
    /// it against the installed index (its SHA-256 must be the catalog's). Nil on any failure — a
    /// delta is never needed: the install then reads the archive as without one.
    func deltaPlan(release: Catalog.Release, previous: ClientContainer.Installed, archiveURL: URL) -> DeltaPlan? {
        guard let offer = release.deltas.first(where: { $0.base.hex == ReleaseName.indexDigest(previous.digest) }),
            let url = CatalogClient.deltaURL(offer, archiveURL: archiveURL)?.absoluteString,
            offer.prefixLength <= PackDelta.maximumPrefixLength
        else { return nil }
        do {
            let prefix = try range(url, 0, offer.prefixLength - 1)
            let delta = try PackDelta.decodePrefix(
                prefix, base: offer.base, target: release.indexSHA256, fileSize: offer.size, source: url)
            var index: [UInt8]? = nil
            if previous.indexBytes.count > PackHeader.size {
                index = try? delta.rebuildIndex(
                    from: Array(previous.indexBytes.dropFirst(PackHeader.size)), expected: release.indexSHA256,
                    using: ZstdDecompressor(), source: url)
                if let i = index, UInt64(i.count) != release.indexLength { index = nil }
            }
            var entries: [SHA256Digest: PackDelta.Entry] = [:]
            for e in delta.entries { entries[e.target] = e }
            return DeltaPlan(url: url, entries: entries, index: index, prefixBytes: prefix.count)
        } catch {
            return nil
        }
    }

    /// What applying a delta gave: bytes downloaded, bytes of chunks rebuilt, and the chunks that
    /// must be fetched whole instead.
    struct DeltaResult {
        let bytes: UInt64
        let plainBytes: UInt64
        let fallback: [Int]
    }

    /// Fetches the frames of `chunks` from the delta in runs (adjacent frames, at most
    /// ``maximumRangeBytes`` each, several at once, each connection on its own part: ``RangeLanes``), rebuilds each chunk from its base chunks (read
    /// from the installed release and re-hashed) and writes it where it goes; records progress per
    /// run, so a restart after a crash re-hashes those chunks instead of fetching them.
    /// - Throws: only what writing the release throws (a file that does not have its SHA-256, the
    ///   disk, the container's database) and cancellation; a delta that fails is a fallback.
    func applyDelta(
        _ delta: DeltaPlan, _ chunks: [(chunk: Int, entry: PackDelta.Entry)],
        localChunks: [SHA256Digest: (path: String, offset: UInt64, size: Int)], placements: ChunkPlacements,
        files: OpenFiles, digest: String, isCancelled: @escaping @Sendable () -> Bool
    ) throws -> DeltaResult {
        let sorted = chunks.sorted { $0.entry.offset < $1.entry.offset }
        var runs: [[(chunk: Int, entry: PackDelta.Entry)]] = []
        for item in sorted {
            if let last = runs.last?.last, let first = runs.last?.first,
                item.entry.offset == last.entry.range.upperBound,
                item.entry.range.upperBound - first.entry.offset <= maximumRangeBytes
            {
                runs[runs.count - 1].append(item)
            } else {
                runs.append([item])
            }
        }
        let lanes = RangeLanes(count: runs.count, connections: connections)
        let fallback = Mutex<[Int]>([])
        let failure = Mutex<(any Error)?>(nil)
        let fetched = AtomicBytes()
        let plain = AtomicBytes()
        let container = self.container
        // A 404 (or any answer but 206) for one run means the delta is not there: stop asking.
        let gone = Atomic<Bool>(false)
        let locals = localChunks
        let planned = runs
        Self.onThreads(lanes.count) { lane in
            let decompressor = ZstdDecompressor()
            while true {
                if failure.withLock({ $0 != nil }) { return }
                if isCancelled() {
                    failure.withLock { $0 = $0 ?? BacklotError(.cancelled, "the download was cancelled") }
                    return
                }
                guard let i = lanes.next(for: lane) else { return }
                let run = planned[i]
                guard !gone.load(ordering: .relaxed),
                    let body = try? self.range(
                        delta.url, run.first!.entry.offset, run.last!.entry.range.upperBound - 1)
                else {
                    gone.store(true, ordering: .relaxed)
                    fallback.withLock { $0 += run.map(\.chunk) }
                    continue
                }
                fetched.add(UInt64(body.count))
                var rebuilt: [Int] = []
                for item in run {
                    let start = Int(item.entry.offset - run.first!.entry.offset)
                    guard
                        let bytes = Self.rebuild(
                            item.entry, body: body, at: start, localChunks: locals, using: decompressor,
                            source: delta.url)
                    else {
                        fallback.withLock { $0.append(item.chunk) }
                        continue
                    }
                    do {
                        for p in placements[item.chunk] { try files.account(p, writing: bytes) }
                    } catch {
                        failure.withLock { $0 = $0 ?? error }
                        return
                    }
                    plain.add(UInt64(bytes.count))
                    rebuilt.append(item.chunk)
                }
                do { try container.recordChunks(digest, rebuilt) } catch { failure.withLock { $0 = $0 ?? error } }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
        return DeltaResult(bytes: fetched.value, plainBytes: plain.value, fallback: fallback.withLock { $0 })
    }

    /// One chunk from its frame (at `start` in `body`) and its base chunks, every one re-hashed;
    /// nil when anything is wrong.
    static func rebuild(
        _ entry: PackDelta.Entry, body: [UInt8], at start: Int,
        localChunks: [SHA256Digest: (path: String, offset: UInt64, size: Int)], using decompressor: ZstdDecompressor,
        source: String
    ) -> [UInt8]? {
        var prefix: [UInt8] = []
        for id in entry.bases {
            guard let local = localChunks[id], let bytes = try? read(local.path, local.offset, local.size),
                SHA256.hash(bytes) == id
            else { return nil }
            prefix += bytes
        }
        return try? body.withUnsafeBytes {
            try PackDelta.apply(
                entry, frame: UnsafeRawBufferPointer(rebasing: $0[start..<start + Int(entry.length)]), prefix: prefix,
                using: decompressor, source: source)
        }
    }
}
