import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotProtocol
import BacklotStore
import Foundation
import Synchronization

/// Deltas: built while a version is checked (``Uploads`` calls
/// ``startDeltas(app:pack:number:archive:open:)``, then ``publishDeltas(_:)`` once the check has
/// passed), published beside the packs, and named in the catalog's releases.
extension Publication {
    /// Earlier versions that get a delta into each new version, by default.
    public static let defaultDeltaBases = 3

    /// How many earlier versions of a pack (the newest ones `COMPLETE` before it) get a delta into
    /// each version processed from now on (0: none).
    public var deltaBases: Int { deltaBasesStorage.withLock { $0 } }

    /// Sets ``deltaBases`` (0…16).
    public func setDeltaBases(_ count: Int) { deltaBasesStorage.withLock { $0 = max(0, min(count, 16)) } }

    /// Starts making the deltas into a version being processed, from the ``deltaBases`` versions
    /// before it, on threads of their own while the caller checks the version (``DeltaBuilds``).
    /// Nil when there is no base. `archive`, when known, is the version's archive digest (a base
    /// of the same bytes is skipped without being read; one not known is skipped once read, by
    /// its pack digest). `open` opens the version's archive (each build reads it with a reader of
    /// its own). A delta is an optimisation: a failure is logged when the deltas are
    /// published, and clients fetch whole chunks.
    func startDeltas(
        app: String, pack: String, number: Int64, archive: String?,
        open: @escaping @Sendable () throws -> any ArchiveReader
    ) -> DeltaBuilds? {
        let count = deltaBases
        guard count > 0 else { return nil }
        let bases: [String]
        do {
            let rows = try db.read { try Uploads.deltaBases(&$0, app: app, pack: pack, before: number, limit: count) }
            bases = rows.compactMap { $0["archive_sha256"]?.string }.filter { $0 != archive }
        } catch {
            log("deltas for \(app)/\(pack) version \(number) were not made: \(error)")
            return nil
        }
        guard !bases.isEmpty else { return nil }
        let builds = DeltaBuilds(app: app, pack: pack, number: number)
        builds.start { [self] builds in
            do {
                let target = try deltaInput(open(), name: "the version being processed")
                target.reader.close()
                let targetDigest = target.input.packDigest
                builds.record { $0.targetDigest = targetDigest }
                // Claimed before the list is read: from now on the deltas into these bytes are
                // kept for this version, which garbage collection cannot see by its digest yet.
                try db.transaction {
                    try Uploads.claimPackDigest(&$0, app: app, pack: pack, number: number, digest: targetDigest.hex)
                }
                let listed = Set(try publishedDeltas(into: targetDigest).map(\.base))
                // The bases' deltas on threads of their own (the system's pool, one of whose
                // threads the check holds, ran them one after another), each with its own readers,
                // a thread per base up to two per core: with three bases on two cores, two threads
                // left the third build to start when one ended and then end alone (a core idle for
                // the difference), while three share the cores until the shortest ends. Each build
                // holds at most 64 MiB of old chunks, 64 MiB of removed files' and 8 MiB of a
                // frame's bases. Oldest first: a delta from further back carries more changes and
                // takes longest. The bases share most of their chunks: each is sampled once, by
                // whichever build comes to it first (``ChunkSampleCache``).
                let samples = ChunkSampleCache()
                let pool = BlockingPool(
                    threads: min(bases.count, 2 * ProcessInfo.processInfo.activeProcessorCount), name: "backlot-delta")
                for i in bases.indices.reversed() {
                    _ = pool.submit { [self] in
                        do {
                            let base = try deltaInput(blob: bases[i])
                            defer { base.reader.close() }
                            guard base.input.packDigest != targetDigest, !listed.contains(base.input.packDigest)
                            else { return }
                            let into = try deltaInput(open(), name: "the version being processed")
                            defer { into.reader.close() }
                            let result = try DeltaBuilder().build(
                                base: base.input, target: into.input, samples: samples,
                                isCancelled: { builds.isCancelled })
                            builds.record {
                                $0.built[i] = DeltaBuilds.Built(base: base.input.packDigest, result: result)
                            }
                        } catch {
                            builds.record { $0.error = $0.error ?? error }
                        }
                    }
                }
                pool.stop()  // runs every build, then ends its threads
            } catch {
                builds.record { $0.error = $0.error ?? error }
            }
        }
        return builds
    }

    /// Waits for the deltas ``startDeltas(app:pack:number:archive:open:)`` started and writes them
    /// to the published tree, before the version can be released (so a catalog never names a
    /// delta that is not there). Called only once the version has passed its check: nothing is
    /// made visible from bytes not yet checked. Failures are logged, never thrown.
    func publishDeltas(_ builds: DeltaBuilds?) {
        guard let builds else { return }
        let outcome = builds.wait()
        let name = "\(builds.app)/\(builds.pack) version \(builds.number)"
        do {
            if let error = outcome.error { throw error }
            guard let targetDigest = outcome.targetDigest else { return }
            let made = try publish(outcome.built, of: builds, into: targetDigest)
            if made > 0 { log("deltas for \(name): \(made) made in \(ContinuousClock.now - builds.started)") }
        } catch {
            log("deltas for \(name) were not made: \(error)")
        }
    }

    /// Writes built deltas and then the list naming them; returns how many were written.
    private func publish(
        _ built: [Int: DeltaBuilds.Built], of builds: DeltaBuilds, into targetDigest: SHA256Digest
    ) throws -> Int {
        let listPath = PublishedTreeLayout.deltaList(packDigest: targetDigest.hex).path
        var list = try publishedDeltas(into: targetDigest)
        var made = 0
        try tree.makeFolder(PublishedTreeLayout.deltasFolder)
        for (_, item) in built.sorted(by: { $0.key < $1.key }) {
            let result = item.result
            guard !result.entries.isEmpty || !result.delta.indexDelta.isEmpty else { continue }
            let digest = SHA256.hash(result.bytes)
            let file = PublishedTreeLayout.delta(sha256: digest.hex)
            // Recorded before it is written, as a blob is: a delta file that collection lists
            // has its row (``collectDeltas()``).
            try recordDelta(
                digest.hex, leadingTo: targetDigest.hex, app: builds.app, pack: builds.pack, number: builds.number,
                replacing: true)
            try tree.write(result.bytes, at: file.path)
            list.append(
                Catalog.Delta(
                    base: item.base, url: file.referenceFromCatalog, size: UInt64(result.bytes.count),
                    sha256: digest, prefixLength: result.delta.prefixLength))
            made += 1
            log(
                "delta \(item.base.short)… → \(targetDigest.short)…: \(result.bytes.count) bytes for \(result.rebuiltChunks) of \(result.missingChunks) missing chunks (\(result.entries.count) frames) (\(result.replacedBytes) of \(result.missingBytes) bytes)"
            )
        }
        // The list last: it names only delta files that are written. It is the same for every pack
        // of these bytes, whichever app uploaded it, so it is bounded: the newest entries kept.
        if list.count > Self.maximumListedDeltas { list.removeFirst(list.count - Self.maximumListedDeltas) }
        if made > 0 { try tree.write(Catalog.encodeDeltaList(list), at: listPath) }
        return made
    }

    /// Records the delta file `sha256`: the pack digest it leads to (``collectDeltas()``) and a
    /// version of it (the download counts). A row already there is named anew when `replacing`
    /// (a delta of the same bytes made for another version of the same digest is named by the
    /// latest: that one is being processed, and so kept, while the earlier may be deleted), else
    /// only when it has no target yet.
    func recordDelta(
        _ sha256: String, leadingTo target: String, app: String, pack: String, number: Int64, replacing: Bool
    ) throws {
        _ = try db.runAlone(
            """
            INSERT INTO published_deltas(sha256, app, pack, version, target) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT(sha256) DO UPDATE SET app = excluded.app, pack = excluded.pack, version = excluded.version,
                target = excluded.target
            """ + (replacing ? "" : " WHERE published_deltas.target IS NULL"),
            [.text(sha256), .text(app), .text(pack), .integer(number), .text(target)])
    }

    /// The most deltas the list into one pack's bytes names (the newest kept).
    static let maximumListedDeltas = 64

    /// The deltas into the version of pack digest `target` that the tree holds (empty when none).
    /// - Throws: what reading the list throws (a list read in part must not be written back short).
    func publishedDeltas(into target: SHA256Digest) throws -> [Catalog.Delta] {
        let relative = PublishedTreeLayout.deltaList(packDigest: target.hex).path
        guard let bytes = try tree.read(relative, atMost: 1 << 20) else { return [] }
        return (try? Catalog.decodeDeltaList(bytes, source: relative)) ?? []
    }

    /// ``publishedDeltas(into:)`` for a catalog: empty when the list cannot be read (a delta is an
    /// optimisation, and a catalog is published without it rather than not at all).
    func catalogDeltas(into target: SHA256Digest) -> [Catalog.Delta] {
        (try? publishedDeltas(into: target)) ?? []
    }

    /// A stored version's archive (a blob) as the delta builder reads it.
    private func deltaInput(blob sha: String) throws -> (input: DeltaBuilder.Input, reader: any ArchiveReader) {
        guard let reader = try archives.readBlob(sha) else {
            throw BacklotError(.io, "the archive \(sha) is missing from the archive store")
        }
        return try deltaInput(reader, name: "archive \(sha)")
    }

    /// An archive as the delta builder reads it (header and index checked), closing `reader` when
    /// that fails.
    private func deltaInput(
        _ reader: any ArchiveReader, name source: String
    ) throws -> (
        input: DeltaBuilder.Input, reader: any ArchiveReader
    ) {
        do {
            let size = reader.size
            let header = try PackHeader.decode(
                try reader.read(count: Int(min(UInt64(PackHeader.size), size)), at: 0), fileSize: size, source: source)
            let indexBytes = try reader.read(count: Int(header.indexLength), at: header.indexOffset)
            guard SHA256.hash(indexBytes) == header.indexDigest else {
                throw BacklotError(.corruptArchive, "the index does not have the header's SHA-256", context: source)
            }
            let index = try PackIndex.decode(indexBytes, header: header, source: source)
            // The chunks are not hashed again here: a stored version's every chunk was checked
            // against its ID when it was processed, and the version being processed is checked
            // while its deltas are built, which are published only if it passes
            // (``publishDeltas(_:)``). Clients check every chunk a delta rebuilds.
            let input = DeltaBuilder.Input(
                index: index, indexBytes: indexBytes, packDigest: header.indexDigest, checksChunks: false,
                read: { count, offset in try reader.read(count: count, at: offset) })
            return (input, reader)
        } catch {
            reader.close()
            throw error
        }
    }

    /// The version a published delta leads to (`app`, `pack`, `number`), nil for a delta the
    /// repository did not record (one written before deltas were recorded).
    static func deltaTarget(_ tx: inout any MetadataConnection, sha256: String) throws -> Database.Row? {
        try tx.query(
            "SELECT app, pack, version AS number FROM published_deltas WHERE sha256 = ?", [.text(sha256)]
        ).first
    }
}
