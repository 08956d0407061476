import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotHTTPClient
import BacklotProtocol
import Dispatch
import Foundation
import Synchronization

/// What the sources of one install's chunks gave: the origin and the LAN peers.
struct TransferTally: Sendable {
    /// Bytes from the origin (chunks only; the header, index and delta are counted apart).
    var originBytes: UInt64 = 0
    var originChunks = 0
    /// Bytes and chunks from peers, each checked against its ID.
    var peerBytes: UInt64 = 0
    var peerChunks = 0
    /// Peers dropped for the rest of the install, and why (a wrong byte, no answer in time).
    var bannedPeers: [String: String] = [:]
}

extension PackInstaller {
    /// Phase 3 with peers (docs/peer-cache.md): asks each peer which of the `missing` chunks it
    /// holds (``PeerCacheLayout/havePath``), then fetches the chunks some peer holds from peers
    /// while the others come from the origin (``fetchChunks(_:_:_:files:id:progress:isCancelled:)``),
    /// at the same time. Every chunk a peer sends is checked against its ID before it is written;
    /// a peer that sends one wrong byte, or does not answer within ``peerDeadline``, is not asked
    /// again during this install, and its chunks go to another peer that holds them or to the
    /// origin. Chunks written are recorded as the origin's are, so a resumed install fetches only
    /// the rest, from whichever source.
    /// - Throws: ``BacklotError/Code/io`` naming the chunks no source could give (the origin
    ///   unreachable and no peer holding them), after keeping those that came; what
    ///   ``fetchChunks(_:_:_:files:id:progress:isCancelled:)`` throws.
    func fetchWithPeers(
        _ missing: [Int], _ plan: InstallPlan, _ folder: PreparedFolder, files: OpenFiles, id: String,
        progress: (@Sendable (UInt64, UInt64) -> Void)?, isCancelled: @escaping @Sendable () -> Bool
    ) throws -> TransferTally {
        let index = plan.index
        let client = HTTPClient(
            stallTimeout: peerDeadline, maximumBodySize: PeerCacheLayout.maximumChunkBytes,
            minimumRate: 1 << 20, baseDeadline: peerDeadline)
        let holders = askPeers(missing.map { index.chunks[$0].id }, client: client)
        let fromPeers = missing.indices.filter { !holders[$0].isEmpty }.map {
            (chunk: missing[$0], holders: holders[$0])
        }
        let fromOrigin = missing.indices.filter { holders[$0].isEmpty }.map { missing[$0] }
        let peerTotal = fromPeers.reduce(UInt64(0)) { $0 + UInt64(index.chunks[$1.chunk].uncompressedSize) }
        let shown = SourcesProgress(peerTotal: peerTotal, progress: progress)
        let report: @Sendable () -> Void = { shown.report() }
        let originProgress: @Sendable (UInt64, UInt64) -> Void = { shown.origin(done: $0, total: $1) }
        let tally = Mutex(TransferTally())
        let originFailure = Mutex<(any Error)?>(nil)
        let peerResult = Mutex<PeerPass?>(nil)
        // Two sources at once: the origin's share on one thread, the peers' on the other; each
        // spreads its requests over threads of its own.
        Self.onThreads(2) { side in
            if side == 0 {
                guard !fromOrigin.isEmpty else { return }
                do {
                    let bytes = try fetchChunks(
                        fromOrigin, plan, folder, files: files, id: id, progress: originProgress,
                        isCancelled: isCancelled)
                    tally.withLock {
                        $0.originBytes += bytes
                        $0.originChunks += fromOrigin.count
                    }
                } catch {
                    originFailure.withLock { $0 = error }
                }
            } else {
                let pass = fetchFromPeers(
                    fromPeers, plan, folder, files: files, client: client, done: shown.peerDone, report: report,
                    isCancelled: isCancelled)
                tally.withLock {
                    $0.peerBytes += pass.bytes
                    $0.peerChunks += pass.chunks
                    $0.bannedPeers.merge(pass.banned) { first, _ in first }
                }
                peerResult.withLock { $0 = pass }
            }
        }
        let pass = peerResult.withLock { $0 } ?? PeerPass()
        if let error = pass.writeFailure { throw error }  // the disk failed: nothing to fetch elsewhere
        if isCancelled() { throw BacklotError(.cancelled, "the download of \(id) was cancelled") }
        var failure = originFailure.withLock { $0 }
        if let error = failure as? BacklotError, error.code == .cancelled { throw error }
        // What peers could not give goes to the origin: chunks no one wrote a byte of (a chunk the
        // origin's first pass failed on may be half placed, and is never written twice).
        if !pass.failed.isEmpty {
            shown.startOriginPass()
            do {
                let bytes = try fetchChunks(
                    pass.failed.sorted(), plan, folder, files: files, id: id, progress: originProgress,
                    isCancelled: isCancelled)
                tally.withLock {
                    $0.originBytes += bytes
                    $0.originChunks += pass.failed.count
                }
            } catch {
                failure = failure ?? error
            }
        }
        let result = tally.withLock { $0 }
        if let failure {
            if let error = failure as? BacklotError, error.code == .cancelled { throw error }
            throw unfetched(fromOrigin + pass.failed, of: plan, id: id, failure: failure, tally: result)
        }
        shown.finish()
        return result
    }

    /// The error of an install whose chunks neither the peers nor the origin gave: how many, how
    /// many bytes, why, and that what came is kept.
    func unfetched(
        _ chunks: [Int], of plan: InstallPlan, id: String, failure: any Error, tally: TransferTally
    ) -> BacklotError {
        let recorded = (try? container.doneChunks(plan.digest)) ?? []
        let lacking = chunks.filter { !recorded.contains($0) }
        let bytes = lacking.reduce(UInt64(0)) { $0 + UInt64(plan.index.chunks[$1].uncompressedSize) }
        return BacklotError(
            .io,
            "\(lacking.count) chunks of \(id) (\(bytes) bytes) could not be fetched: no peer holds them and the origin failed (\(failure))",
            context: plan.url,
            hint:
                "the \(tally.peerChunks) chunks peers gave (\(tally.peerBytes) bytes) are kept: fetch again when the origin answers"
        )
    }

    /// Asks every peer, at once, which of `ids` it holds; the peers (by number in ``peers``) that
    /// hold each. A peer that does not answer, or answers with anything but the bits asked for,
    /// holds nothing.
    func askPeers(_ ids: [SHA256Digest], client: HTTPClient) -> [[Int]] {
        let answers = Mutex<[Int: [UInt8]]>([:])
        Self.onThreads(peers.count) { p in
            var bits: [UInt8] = []
            var start = 0
            while start < ids.count {
                let batch = Array(ids[start..<min(ids.count, start + PeerCacheLayout.maximumHaveQuery)])
                let size = (batch.count + 7) / 8
                guard
                    let r = try? client.send(
                        "POST", peerURL(p, PeerCacheLayout.havePath),
                        headers: ["Content-Type": "application/octet-stream"],
                        body: .bytes(PeerCacheLayout.haveQuery(batch)), expectedBodySize: size),
                    r.status == 200, !r.exceededExpectedSize, r.body.count == size
                else { return }
                bits += r.body
                // Bits past the batch's end are ignored, as the format says.
                start += batch.count
            }
            answers.withLock { $0[p] = bits }
        }
        let held = answers.withLock { $0 }
        return ids.indices.map { i in
            // A batch boundary falls on a multiple of 8 (``PeerCacheLayout/maximumHaveQuery`` is), so
            // bit i of the joined answers is chunk i's.
            held.keys.sorted().filter { PeerCacheLayout.answerHolds(held[$0]!, i) }
        }
    }

    /// The URL of `path` on peer number `p`.
    func peerURL(_ p: Int, _ path: String) -> String {
        var base = peers[p].absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return base + path
    }

    /// What the peers' pass gave.
    struct PeerPass: Sendable {
        var bytes: UInt64 = 0
        var chunks = 0
        /// Peers dropped, by URL, and why.
        var banned: [String: String] = [:]
        /// Chunks no peer gave, not a byte of them written.
        var failed: [Int] = []
        /// Writing a chunk failed (the disk): the install stops with it.
        var writeFailure: (any Error)?
    }

    /// Fetches `chunks` from the peers that hold them, ``peerConnections`` at once: each chunk
    /// from one of its holders not banned yet, its bytes checked against its ID. A busy peer's
    /// `Retry-After` of at most 2 s is waited for (4 times a peer and 8 s an install at most),
    /// then the chunk goes on; a wrong or short body, or no answer in time, bans the peer; so do 3
    /// chunks it said it held and then had not (404), so that a peer that claims every chunk costs
    /// a few requests, not one per chunk.
    func fetchFromPeers(
        _ chunks: [(chunk: Int, holders: [Int])], _ plan: InstallPlan, _ folder: PreparedFolder, files: OpenFiles,
        client: HTTPClient, done: AtomicBytes, report: @escaping @Sendable () -> Void,
        isCancelled: @escaping @Sendable () -> Bool
    ) -> PeerPass {
        guard !chunks.isEmpty else { return PeerPass() }
        let index = plan.index
        let placements = folder.placements
        let container = self.container
        let peers = self.peers
        let next = Mutex(0)
        let state = Mutex(PeerPassState())
        // Recorded as the origin's are: every 4 MiB or a quarter of a second, so that a crash
        // loses only what was in flight.
        let record: @Sendable (Bool) -> Void = { all in
            let due = state.withLock { $0.takeUnrecorded(all: all) }
            if !due.isEmpty {
                try? container.recordChunks(plan.digest, due)
                TestStopPoint.reach("peers.afterRecord")
            }
        }
        Self.onThreads(max(1, min(peerConnections, chunks.count))) { _ in
            while !isCancelled() && state.withLock({ $0.writeFailure == nil }) {
                let i = next.withLock { n -> Int in
                    defer { n += 1 }
                    return n
                }
                guard i < chunks.count else { return }
                let (c, holders) = chunks[i]
                let entry = index.chunks[c]
                // Start at a different holder for each chunk, so that the load spreads over peers.
                guard
                    let bytes = self.chunk(
                        entry.id, size: Int(entry.uncompressedSize), from: holders, startingAt: i, client: client,
                        state: state)
                else {
                    state.withLock { $0.failed.append(c) }
                    continue
                }
                do {
                    for place in placements[c] { try files.account(place, writing: bytes) }
                } catch {
                    // Half placed: never written again in this install (the next attempt starts over).
                    state.withLock { $0.writeFailure = $0.writeFailure ?? error }
                    continue
                }
                _ = done.add(UInt64(bytes.count))
                state.withLock { $0.wrote(c, bytes: bytes.count) }
                record(false)
                report()
            }
        }
        record(true)
        // Chunks never tried (cancelled, or a write failed) are left for the next attempt.
        let tried = next.withLock { min($0, chunks.count) }
        return state.withLock { s in
            PeerPass(
                bytes: done.value, chunks: s.written,
                banned: s.banned.reduce(into: [:]) { out, entry in out[peers[entry.key].absoluteString] = entry.value },
                failed: s.failed + chunks[tried...].map(\.chunk), writeFailure: s.writeFailure)
        }
    }

    /// Chunk `id` from the first of `holders` (starting at `startingAt`, modulo their number) that
    /// gives it, its bytes checked; nil when none does. A busy peer's `Retry-After` of at most 2 s
    /// is waited for within ``PeerPassState/mayWait(_:seconds:)``'s bounds, then the next holder
    /// is asked, the busy one not blamed; a peer missing a chunk it claimed is struck, a wrong
    /// answer bans it.
    func chunk(
        _ id: SHA256Digest, size: Int, from holders: [Int], startingAt start: Int, client: HTTPClient,
        state: borrowing Mutex<PeerPassState>
    ) -> [UInt8]? {
        var busy = 0
        var k = 0
        while k < holders.count {
            let p = holders[(k + start) % holders.count]
            k += 1
            if state.withLock({ $0.banned[p] != nil }) { continue }
            switch ask(p, for: id, size: size, client: client) {
            case .chunk(let bytes):
                return bytes
            case .busy(let after):
                // A peer over its byte budget asks for a second or two: the LAN is worth the wait
                // (the origin's bytes are what the cache saves), within bounds. A busy peer is an
                // honest one keeping its owner's budget (a 503 costs a request).
                if let after, (0...2).contains(after), busy < 3,
                    state.withLock({ $0.mayWait(p, seconds: max(after, 1)) })
                {
                    busy += 1
                    usleep(useconds_t(max(after, 1)) * 1_000_000)
                    k -= 1
                } else {
                    state.withLock { $0.stillBusy(p) }
                }
            case .missing:
                state.withLock { $0.strike(p, "said it held chunks it then did not have") }
            case .refused(let why):
                state.withLock { $0.ban(p, why) }
            }
        }
        return nil
    }

    /// What one peer answered when asked for one chunk.
    enum PeerAnswer {
        /// Its bytes, checked against its ID.
        case chunk([UInt8])
        /// 503 or 429, with the `Retry-After` seconds if it gave a number.
        case busy(retryAfter: Int?)
        /// 404: it does not hold the chunk (after saying it did).
        case missing
        /// No answer in time, a body cut short, wrong bytes or another status: why.
        case refused(String)
    }

    /// Asks peer `p` for chunk `id` of `size` bytes.
    func ask(_ p: Int, for id: SHA256Digest, size: Int, client: HTTPClient) -> PeerAnswer {
        let answer: HTTPClient.Response
        do {
            answer = try client.send("GET", peerURL(p, PeerCacheLayout.chunkPath(id)), expectedBodySize: size)
        } catch {
            return .refused("the request failed (no answer in time, or a body cut short): \(error)")
        }
        switch answer.status {
        case 503, 429:
            return .busy(retryAfter: answer.headers["retry-after"].flatMap { CheckedInteger.parse($0, as: Int.self) })
        case 404:
            return .missing
        case 200 where !answer.exceededExpectedSize && answer.body.count == size && SHA256.hash(answer.body) == id:
            return .chunk(answer.body)
        case 200:
            return .refused("sent \(answer.body.count) bytes for chunk \(id.short)… that are not its bytes")
        default:
            return .refused("answered \(answer.status)")
        }
    }
}

/// What the peers' threads share during one pass (``PackInstaller/fetchFromPeers(_:_:_:files:client:done:report:isCancelled:)``).
struct PeerPassState {
    var banned: [Int: String] = [:]
    /// Chunks a peer said it held and then did not send.
    var strikes: [Int: Int] = [:]
    /// Seconds waited for each peer's `Retry-After`, and in all.
    var waits: [Int: Int] = [:]
    var waited = 0
    var failed: [Int] = []
    var unrecorded: [Int] = []
    var unrecordedBytes: UInt64 = 0
    var since = ContinuousClock.now
    var written = 0
    var writeFailure: (any Error)?

    /// Chunk `c` of `bytes` bytes is written: to be recorded.
    mutating func wrote(_ c: Int, bytes: Int) {
        unrecorded.append(c)
        unrecordedBytes += UInt64(bytes)
        written += 1
    }

    /// The chunks written and not recorded yet, when they are due (4 MiB of them, a quarter of a
    /// second since the last record, or `all`); none otherwise.
    mutating func takeUnrecorded(all: Bool) -> [Int] {
        guard all || unrecordedBytes >= 4 << 20 || ContinuousClock.now - since >= .milliseconds(250) else { return [] }
        defer {
            unrecorded = []
            unrecordedBytes = 0
            since = .now
        }
        return unrecorded
    }

    mutating func ban(_ p: Int, _ why: String) {
        if banned[p] == nil { banned[p] = why }
    }

    mutating func strike(_ p: Int, _ why: String) {
        strikes[p, default: 0] += 1
        if strikes[p]! >= 3 { ban(p, why + " (3 times)") }
    }

    /// Busy answers past the waits, by peer (``stillBusy(_:)``).
    var busyPastWaits: [Int: Int] = [:]

    /// Peer `p` answered busy and is not waited for: past ``maximumBusyPastWaits`` such answers it
    /// is asked nothing more in this install. Not a fault (an honest peer keeping its owner's
    /// budget does it), but each costs a request, up to the 2 s a peer has to answer: a peer that
    /// is always busy, or says so just before that time, would otherwise hold every chunk it
    /// claims for that long.
    mutating func stillBusy(_ p: Int) {
        busyPastWaits[p, default: 0] += 1
        if busyPastWaits[p]! >= Self.maximumBusyPastWaits {
            ban(p, "answered busy \(Self.maximumBusyPastWaits) times past the waits it was given")
        }
    }

    /// Busy answers past the waits after which a peer is asked nothing more in an install.
    static let maximumBusyPastWaits = 8

    /// Whether another wait of `seconds` for peer `p` is within bounds (4 a peer, 8 s an install).
    mutating func mayWait(_ p: Int, seconds: Int) -> Bool {
        guard waits[p, default: 0] < 4, waited + seconds <= 8 else { return false }
        waits[p, default: 0] += 1
        waited += seconds
        return true
    }
}
