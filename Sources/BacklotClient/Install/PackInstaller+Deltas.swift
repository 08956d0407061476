import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotProtocol
import BacklotZstd
import Dispatch
import Foundation
import Synchronization

/// A delta the installer uses: where it is, its checked prefix, the index it rebuilt (nil: read
/// the index from the archive) with what its early entries rebuilt on the way, and once resolved
/// against the indexes, its entries and the entry that rebuilds each target chunk.
struct DeltaPlan: Sendable {
    let url: String
    let delta: PackDelta
    let index: [UInt8]?
    /// Bytes read to make the plan: the prefix, and the early frames (version 3).
    let prefixBytes: Int
    /// Each early entry's target chunks (entry `i`, ``PackDelta/earlyCount`` of them), checked
    /// with `index`; empty when the index was not rebuilt.
    let early: [[UInt8]]
    private(set) var entries: [PackDelta.Entry] = []
    private(set) var entryOf: [SHA256Digest: Int] = [:]

    init(url: String, delta: PackDelta, index: [UInt8]?, prefixBytes: Int, early: [[UInt8]] = []) {
        self.url = url
        self.delta = delta
        self.index = index
        self.prefixBytes = prefixBytes
        self.early = early
    }

    /// The plan with its entries resolved against the installed release's whole index and the
    /// target's (docs/format.md §14); nil when the table does not resolve.
    func resolved(previous: ClientContainer.Installed, target: PackIndex) -> DeltaPlan? {
        var plan = self
        do {
            var base: PackIndex? = nil
            if delta.formatVersion >= 2 {
                guard previous.indexBytes.count > PackHeader.size else { return nil }
                let header = try PackHeader.decode(
                    Array(previous.indexBytes.prefix(PackHeader.size)), fileSize: nil, source: "stored")
                base = try PackIndex.decode(
                    Array(previous.indexBytes.dropFirst(PackHeader.size)), header: header, source: "stored")
            }
            plan.entries = try delta.entries(base: base ?? target, target: target, source: url)
        } catch {
            return nil
        }
        for (i, e) in plan.entries.enumerated() { for t in e.targets { plan.entryOf[t.id] = i } }
        return plan
    }
}

extension PackInstaller {
    /// The delta into `release` from the installed version, when the catalog lists one: its prefix
    /// read with one Range request and checked (docs/format.md §14), and the index rebuilt from
    /// it against the installed index (its SHA-256 must be the catalog's) — for a version-3 delta
    /// with early entries, after their frames (one more Range request) have rebuilt the chunks
    /// whose IDs the index delta leaves out, from the installed release's chunks. Nil on any
    /// failure of the prefix — a delta is never needed: the install then reads the archive as
    /// without one; an index that is not rebuilt is read from the archive. `read` is what was
    /// downloaded either way (the prefix, the early frames), so that a refused prefix still counts.
    /// - Parameter keptIndexFile: where an earlier attempt at this release kept its index: when
    ///   that still has the catalog's SHA-256 it is used as it is, and the early frames are read
    ///   as ordinary ones, if needed at all.
    func deltaPlan(
        id: String, release: Catalog.Release, previous: ClientContainer.Installed, archiveURL: URL,
        keptIndexFile: String
    ) -> (plan: DeltaPlan?, read: Int) {
        var read = 0
        guard let offer = release.deltas.first(where: { $0.base.hex == ReleaseName.indexDigest(previous.digest) }),
            let url = CatalogClient.deltaURL(offer, archiveURL: archiveURL)?.absoluteString,
            offer.prefixLength <= PackDelta.maximumPrefixLength
        else { return (nil, 0) }
        do {
            let prefix = try range(url, 0, offer.prefixLength - 1)
            read = prefix.count
            let delta = try PackDelta.decodePrefix(
                prefix, base: offer.base, target: release.indexSHA256, fileSize: offer.size, source: url)
            var index: [UInt8]? = nil
            var early: [[UInt8]] = []
            if previous.indexBytes.count > PackHeader.size, UInt64(delta.targetIndexLength) == release.indexLength {
                let baseIndex = Array(previous.indexBytes.dropFirst(PackHeader.size))
                if let knownIndex = Self.keptIndex(keptIndexFile, release: release) {
                    index = knownIndex
                } else if delta.earlyCount == 0 && delta.indexBases.isEmpty {
                    index = try? delta.rebuildIndex(
                        from: baseIndex, expected: release.indexSHA256, using: ZstdDecompressor(), source: url)
                } else if let old = Self.decodeStored(previous.indexBytes, name: previous.digest),
                    let frames = delta.earlyCount == 0
                        ? [] : try? range(url, delta.earlyRange.lowerBound, delta.earlyRange.upperBound - 1)
                {
                    read += frames.count
                    let bases = Set(delta.slots.prefix(delta.earlyCount).flatMap(\.bases) + delta.indexBases)
                    let places = Self.chunkPlaces(
                        bases, in: old.index, folder: container.releaseFolder(id, digest: previous.digest))
                    let rebuilt = try? delta.rebuildIndex(
                        from: baseIndex, expected: release.indexSHA256, earlyFrames: frames, base: old.index,
                        baseChunk: { b in
                            guard let place = places[b] else {
                                throw BacklotError(.notFound, "base chunk \(b) is in no installed file", context: url)
                            }
                            return try Self.read(place.path, place.offset, place.size)
                        }, using: ZstdDecompressor(), source: url)
                    (index, early) = (rebuilt?.bytes, rebuilt?.early ?? [])
                }
                if let i = index, UInt64(i.count) != release.indexLength { (index, early) = (nil, []) }
            }
            return (DeltaPlan(url: url, delta: delta, index: index, prefixBytes: read, early: early), read)
        } catch {
            return (nil, read)
        }
    }

    /// Where each of `chunks` (numbers in `index`, the installed release's) is in the release's
    /// `folder`: the first file holding it, at which offset.
    static func chunkPlaces(
        _ chunks: Set<Int>, in index: PackIndex, folder: String
    ) -> [Int: (path: String, offset: UInt64, size: Int)] {
        var places: [Int: (path: String, offset: UInt64, size: Int)] = [:]
        for file in index.files where places.count < chunks.count {
            var offset: UInt64 = 0
            for c in file.chunks {
                let size = index.chunks[c].uncompressedSize
                if chunks.contains(c), places[c] == nil { places[c] = (folder + "/" + file.path, offset, Int(size)) }
                offset += UInt64(size)
            }
        }
        return places
    }

    /// What applying a delta gave: bytes downloaded, bytes of chunks rebuilt, and the chunks that
    /// must be fetched whole instead.
    struct DeltaResult {
        let bytes: UInt64
        let plainBytes: UInt64
        let fallback: [Int]
    }

    /// Fetches the frames that rebuild `chunks` from the delta in runs (adjacent frames, at most
    /// ``maximumRangeBytes`` each, several at once, each connection on its own part:
    /// ``RangeLanes``), rebuilds each frame's chunks from its base chunks (read from the installed
    /// release and re-hashed) and writes those needed where they go; records progress per run, so a
    /// restart after a crash re-hashes those chunks instead of fetching them.
    /// - Parameter chunks: each chunk to rebuild (its number and ID) and the number of its entry in
    ///   `delta.entries`.
    /// - Throws: only what writing the release throws (a file that does not have its SHA-256, the
    ///   disk, the container's database) and cancellation; a delta that fails is a fallback.
    func applyDelta(
        _ delta: DeltaPlan, _ chunks: [(chunk: Int, id: SHA256Digest, entry: Int)],
        localChunks: [SHA256Digest: (path: String, offset: UInt64, size: Int)], placements: ChunkPlacements,
        files: OpenFiles, digest: String, isCancelled: @escaping @Sendable () -> Bool
    ) throws -> DeltaResult {
        // The entries needed, each with the chunks it rebuilds that this install writes.
        var wanted: [Int: [SHA256Digest: Int]] = [:]
        for item in chunks { wanted[item.entry, default: [:]][item.id] = item.chunk }
        // Early entries were rebuilt with the index (checked with it): written, not fetched.
        var early = UInt64(0)
        var written: [Int] = []
        for (e, want) in wanted where e < delta.early.count {
            var start = 0
            for t in delta.entries[e].targets {
                defer { start += Int(t.size) }
                guard let c = want[t.id] else { continue }
                let chunk = Array(delta.early[e][start..<start + Int(t.size)])
                for p in placements[c] { try files.account(p, writing: chunk) }
                early += UInt64(t.size)
                written.append(c)
            }
            wanted[e] = nil
        }
        try container.recordChunks(digest, written)
        let sorted = wanted.keys.sorted { delta.entries[$0].offset < delta.entries[$1].offset }
        var runs: [[Int]] = []
        for e in sorted {
            let entry = delta.entries[e]
            if let last = runs.last?.last, let first = runs.last?.first,
                entry.offset == delta.entries[last].range.upperBound,
                entry.range.upperBound - delta.entries[first].offset <= maximumRangeBytes
            {
                runs[runs.count - 1].append(e)
            } else {
                runs.append([e])
            }
        }
        let lanes = RangeLanes(count: runs.count, connections: connections)
        let fallback = Mutex<[Int]>([])
        let failure = Mutex<(any Error)?>(nil)
        let fetched = AtomicBytes()
        let plain = AtomicBytes()
        plain.add(early)
        let container = self.container
        // A 404 (or any answer but 206) for one run means the delta is not there: stop asking.
        let gone = Atomic<Bool>(false)
        let locals = localChunks
        let planned = runs
        let needed = wanted
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
                let first = delta.entries[run.first!]
                guard !gone.load(ordering: .relaxed),
                    let body = try? self.range(
                        delta.url, first.offset, delta.entries[run.last!].range.upperBound - 1)
                else {
                    gone.store(true, ordering: .relaxed)
                    fallback.withLock { $0 += run.flatMap { (needed[$0] ?? [:]).values } }
                    continue
                }
                fetched.add(UInt64(body.count))
                var rebuilt: [Int] = []
                for e in run {
                    let entry = delta.entries[e]
                    let want = needed[e] ?? [:]
                    guard
                        let bytes = Self.rebuild(
                            entry, body: body, at: Int(entry.offset - first.offset), localChunks: locals,
                            using: decompressor, source: delta.url)
                    else {
                        fallback.withLock { $0 += want.values }
                        continue
                    }
                    do {
                        var start = 0
                        for t in entry.targets {
                            defer { start += Int(t.size) }
                            guard let c = want[t.id] else { continue }
                            let chunk = Array(bytes[start..<start + Int(t.size)])
                            for p in placements[c] { try files.account(p, writing: chunk) }
                            plain.add(UInt64(t.size))
                            rebuilt.append(c)
                        }
                    } catch {
                        failure.withLock { $0 = $0 ?? error }
                        return
                    }
                }
                do { try container.recordChunks(digest, rebuilt) } catch { failure.withLock { $0 = $0 ?? error } }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
        return DeltaResult(bytes: fetched.value, plainBytes: plain.value, fallback: fallback.withLock { $0 })
    }

    /// One entry's chunks from its frame (at `start` in `body`) and its base chunks, every one
    /// re-hashed; nil when anything is wrong.
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
