import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotProtocol
import BacklotStore
import Foundation
import Synchronization

/// Deltas: made when a version is processed (``Uploads`` calls ``buildDeltas(app:pack:number:archive:)``),
/// published beside the packs, and named in the catalog's releases.
extension Publication {
    /// Earlier versions that get a delta into each new version, by default.
    public static let defaultDeltaBases = 3

    /// How many earlier versions of a pack (the newest ones `COMPLETE` before it) get a delta into
    /// each version processed from now on (0: none).
    public var deltaBases: Int { deltaBasesStorage.withLock { $0 } }

    /// Sets ``deltaBases`` (0…16).
    public func setDeltaBases(_ count: Int) { deltaBasesStorage.withLock { $0 = max(0, min(count, 16)) } }

    /// Makes the deltas into a version that was just verified, from the ``deltaBases`` versions
    /// before it, and writes them to the published tree before the version can be released (so a
    /// catalog never names a delta that is not there). A delta is an optimisation: a failure is
    /// logged, and clients fetch whole chunks.
    func buildDeltas(app: String, pack: String, number: Int64, archive: String) {
        let started = ContinuousClock.now
        do {
            let made = try buildDeltasNow(app: app, pack: pack, number: number, archive: archive)
            if made > 0 {
                log("deltas for \(app)/\(pack) version \(number): \(made) made in \(ContinuousClock.now - started)")
            }
        } catch {
            log("deltas for \(app)/\(pack) version \(number) were not made: \(error)")
        }
    }

    private func buildDeltasNow(app: String, pack: String, number: Int64, archive: String) throws -> Int {
        let count = deltaBases
        guard count > 0 else { return 0 }
        let rows = try db.read { try Uploads.deltaBases(&$0, app: app, pack: pack, before: number, limit: count) }
        let bases = rows.compactMap { $0["archive_sha256"]?.string }.filter { $0 != archive }
        guard !bases.isEmpty else { return 0 }
        let opened = try deltaInput(archive)
        opened.reader.close()
        let targetDigest = opened.input.packDigest
        let listPath = PublishedTreeLayout.deltaList(packDigest: targetDigest.hex).path
        var list = try publishedDeltas(into: targetDigest)
        let listed = Set(list.map(\.base))
        // Each base's delta on its own thread (as many at once as there are cores), each with its
        // own readers: three bases cost about two deltas' time on two cores, not three.
        let built = Mutex<[Int: (base: SHA256Digest, result: DeltaBuilder.Result)]>([:])
        let failure = Mutex<(any Error)?>(nil)
        // Oldest first: a delta from further back carries more changes and takes longest, and the
        // longest job started first ends the soonest on two cores (3 bases: about 3 units of
        // time where newest first took 4).
        DispatchQueue.concurrentPerform(iterations: bases.count) { k in
            let i = bases.count - 1 - k
            do {
                let base = try deltaInput(bases[i])
                defer { base.reader.close() }
                guard base.input.packDigest != targetDigest, !listed.contains(base.input.packDigest) else {
                    return
                }
                let into = try deltaInput(archive)
                defer { into.reader.close() }
                let result = try DeltaBuilder().build(base: base.input, target: into.input)
                built.withLock { $0[i] = (base.input.packDigest, result) }
            } catch {
                failure.withLock { $0 = $0 ?? error }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
        var made = 0
        try tree.makeFolder(PublishedTreeLayout.deltasFolder)
        for (_, item) in built.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            let result = item.result
            guard !result.entries.isEmpty || !result.delta.indexDelta.isEmpty else { continue }
            let digest = SHA256.hash(result.bytes)
            let file = PublishedTreeLayout.delta(sha256: digest.hex)
            try tree.write(result.bytes, at: file.path)
            // Which version the delta leads to, for the download counts (a delta of the same
            // bytes written for another version already names one: the first stays).
            _ = try db.runAlone(
                "INSERT INTO published_deltas(sha256, app, pack, version) VALUES (?, ?, ?, ?) ON CONFLICT(sha256) DO NOTHING",
                [.text(digest.hex), .text(app), .text(pack), .integer(number)])
            list.append(
                Catalog.Delta(
                    base: item.base, url: file.referenceFromCatalog, size: UInt64(result.bytes.count),
                    sha256: digest, prefixLength: result.delta.prefixLength))
            made += 1
            log(
                "delta \(item.base.short)… → \(targetDigest.short)…: \(result.bytes.count) bytes for \(result.rebuiltChunks) of \(result.missingChunks) missing chunks (\(result.entries.count) frames) (\(result.replacedBytes) of \(result.missingBytes) bytes)"
            )
        }
        // The list last: it names only delta files that are written.
        if made > 0 { try tree.write(Catalog.encodeDeltaList(list), at: listPath) }
        return made
    }

    /// The deltas into the version of pack digest `target` that the tree holds (empty when none).
    func publishedDeltas(into target: SHA256Digest) throws -> [Catalog.Delta] {
        let relative = PublishedTreeLayout.deltaList(packDigest: target.hex).path
        guard let bytes = try tree.read(relative, atMost: 1 << 20) else { return [] }
        return (try? Catalog.decodeDeltaList(bytes, source: relative)) ?? []
    }

    /// A stored archive as the delta builder reads it (header and index checked).
    private func deltaInput(_ sha: String) throws -> (input: DeltaBuilder.Input, reader: any ArchiveReader) {
        guard let reader = try archives.readBlob(sha) else {
            throw BacklotError(.io, "the archive \(sha) is missing from the archive store")
        }
        do {
            let size = reader.size
            let source = "archive \(sha)"
            let header = try PackHeader.decode(
                try reader.read(count: Int(min(UInt64(PackHeader.size), size)), at: 0), fileSize: size, source: source)
            let indexBytes = try reader.read(count: Int(header.indexLength), at: header.indexOffset)
            guard SHA256.hash(indexBytes) == header.indexDigest else {
                throw BacklotError(.corruptArchive, "the index does not have the header's SHA-256", context: source)
            }
            let index = try PackIndex.decode(indexBytes, header: header, source: source)
            let input = DeltaBuilder.Input(
                index: index, indexBytes: indexBytes, packDigest: header.indexDigest,
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
