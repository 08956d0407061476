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
        // The origin's progress over its passes (the second pass's figures start again from 0:
        // they are added to what the first pass did, so that the bytes shown never go back).
        let origin = Mutex<(base: UInt64, baseTotal: UInt64, done: UInt64, total: UInt64)>((0, 0, 0, 0))
        let peerDone = AtomicBytes()
        let report: @Sendable () -> Void = {
            let o = origin.withLock { $0 }
            progress?(o.base + o.done + peerDone.value, o.baseTotal + o.total + peerTotal)
        }
        let originProgress: @Sendable (UInt64, UInt64) -> Void = { done, total in
            origin.withLock {
                $0.done = done
                $0.total = total
            }
            report()
        }
        let tally = Mutex(TransferTally())
        let originFailure = Mutex<(any Error)?>(nil)
        let fallback = Mutex<[Int]>([])
        // Two sources at once: the origin's share on one thread, the peers' on the other (each
        // spreads its requests over threads of its own).
        DispatchQueue.concurrentPerform(iterations: 2) { side in
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
                let result = fetchFromPeers(
                    fromPeers, plan, folder, files: files, client: client, done: peerDone, report: report,
                    isCancelled: isCancelled)
                tally.withLock {
                    $0.peerBytes += result.bytes
                    $0.peerChunks += result.chunks
                    $0.bannedPeers.merge(result.banned) { first, _ in first }
                }
                fallback.withLock { $0 = result.failed }
            }
        }
        if isCancelled() { throw BacklotError(.cancelled, "the download of \(id) was cancelled") }
        var failure = originFailure.withLock { $0 }
        if let error = failure as? BacklotError, error.code == .cancelled { throw error }
        // What peers could not give, and what the origin could not give the first time, from the origin.
        let rest = (fallback.withLock { $0 } + (failure == nil ? [] : fromOrigin)).sorted()
        if !rest.isEmpty {
            origin.withLock { o in
                o = (o.base + o.done, o.baseTotal + o.total, 0, 0)
            }
            do {
                let bytes = try fetchChunks(
                    rest, plan, folder, files: files, id: id, progress: originProgress, isCancelled: isCancelled)
                tally.withLock {
                    $0.originBytes += bytes
                    $0.originChunks += rest.count
                }
                failure = nil
            } catch {
                failure = error
            }
        }
        let result = tally.withLock { $0 }
        if let failure {
            if let error = failure as? BacklotError, error.code == .cancelled { throw error }
            let recorded = (try? container.doneChunks(plan.digest)) ?? []
            let lacking = rest.filter { !recorded.contains($0) }
            let bytes = lacking.reduce(UInt64(0)) { $0 + UInt64(index.chunks[$1].uncompressedSize) }
            throw BacklotError(
                .io,
                "\(lacking.count) chunks of \(id) (\(bytes) bytes) could not be fetched: no peer holds them and the origin failed (\(failure))",
                context: plan.url,
                hint:
                    "the \(result.peerChunks) chunks peers gave (\(result.peerBytes) bytes) are kept: fetch again when the origin answers"
            )
        }
        let total = max(1, origin.withLock { $0.base + $0.done } + peerDone.value)
        progress?(total, total)
        return result
    }

    /// Asks every peer, at once, which of `ids` it holds; the peers (by number in ``peers``) that
    /// hold each. A peer that does not answer, or answers with anything but the bits asked for,
    /// holds nothing.
    func askPeers(_ ids: [SHA256Digest], client: HTTPClient) -> [[Int]] {
        let answers = Mutex<[Int: [UInt8]]>([:])
        DispatchQueue.concurrentPerform(iterations: peers.count) { p in
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

    /// Fetches `chunks` from the peers that hold them, several at once: each chunk from one of its
    /// holders not banned yet, its bytes checked against its ID; a 404 or 503 moves to the next
    /// holder (after waiting for a busy peer's `Retry-After` of at most 2 s, at most 4 times per
    /// peer), a wrong or short body and a peer that does not answer in time ban the peer.
    /// - Returns: the bytes and chunks written, the peers banned, and the chunks no peer gave.
    func fetchFromPeers(
        _ chunks: [(chunk: Int, holders: [Int])], _ plan: InstallPlan, _ folder: PreparedFolder, files: OpenFiles,
        client: HTTPClient, done: AtomicBytes, report: @escaping @Sendable () -> Void,
        isCancelled: @escaping @Sendable () -> Bool
    ) -> (bytes: UInt64, chunks: Int, banned: [String: String], failed: [Int]) {
        guard !chunks.isEmpty else { return (0, 0, [:], []) }
        let index = plan.index
        let placements = folder.placements
        let container = self.container
        let next = Mutex(0)
        let banned = Mutex<[Int: String]>([:])
        let waits = Mutex<[Int: Int]>([:])
        let failed = Mutex<[Int]>([])
        // Recorded as the origin's are: every 4 MiB or a quarter of a second, so that a crash
        // loses only what was in flight.
        let written = Mutex<(chunks: [Int], count: Int, bytes: UInt64, since: ContinuousClock.Instant)>(
            ([], 0, 0, .now))
        let record: @Sendable (Bool) -> Void = { all in
            let due = written.withLock { w -> [Int] in
                guard all || w.bytes >= 4 << 20 || ContinuousClock.now - w.since >= .milliseconds(250) else {
                    return []
                }
                defer {
                    w.chunks = []
                    w.bytes = 0
                    w.since = .now
                }
                return w.chunks
            }
            if !due.isEmpty {
                try? container.recordChunks(plan.digest, due)
                TestStopPoint.reach("peers.afterRecord")
            }
        }
        DispatchQueue.concurrentPerform(iterations: max(1, min(connections * 2, chunks.count))) { _ in
            while !isCancelled() {
                let i = next.withLock { n -> Int in
                    defer { n += 1 }
                    return n
                }
                guard i < chunks.count else { return }
                let (c, holders) = chunks[i]
                let chunk = index.chunks[c]
                var got = false
                // Start at a different holder for each chunk, so that the load spreads over peers.
                var busy = 0
                var k = 0
                while k < holders.count {
                    let p = holders[(k + i) % holders.count]
                    k += 1
                    if banned.withLock({ $0[p] != nil }) { continue }
                    let answer: HTTPClient.Response
                    do {
                        answer = try client.send(
                            "GET", peerURL(p, PeerCacheLayout.chunkPath(chunk.id)),
                            expectedBodySize: Int(chunk.uncompressedSize))
                    } catch {
                        banned.withLock {
                            $0[p] = $0[p] ?? "the request failed (no answer in time, or a body cut short): \(error)"
                        }
                        continue
                    }
                    if answer.status == 503 || answer.status == 429 {
                        // A peer over its byte budget asks for a second or two: the LAN is worth the
                        // wait (the origin's bytes are what the cache saves), a few times per chunk
                        // and per peer; past that, the chunk goes on (a slower peer never holds an
                        // install back by more than a few seconds).
                        if let after = answer.headers["retry-after"].flatMap({ CheckedInteger.parse($0, as: Int.self) }
                        ),
                            (0...2).contains(after), busy < 3,
                            waits.withLock({ w in
                                w[p, default: 0] += 1
                                return w[p]! <= 4
                            })
                        {
                            busy += 1
                            usleep(useconds_t(max(after, 1)) * 1_000_000)
                            k -= 1
                        }
                        continue
                    }
                    if answer.status == 404 { continue }
                    guard answer.status == 200, !answer.exceededExpectedSize,
                        answer.body.count == Int(chunk.uncompressedSize), SHA256.hash(answer.body) == chunk.id
                    else {
                        banned.withLock {
                            $0[p] =
                                $0[p]
                                ?? (answer.status == 200
                                    ? "sent \(answer.body.count) bytes for chunk \(chunk.id.short)… that are not its bytes"
                                    : "answered \(answer.status)")
                        }
                        continue
                    }
                    do {
                        for place in placements[c] { try files.account(place, writing: answer.body) }
                    } catch {
                        break  // the disk failed: the origin's pass will say so
                    }
                    _ = done.add(UInt64(answer.body.count))
                    written.withLock {
                        $0.chunks.append(c)
                        $0.count += 1
                        $0.bytes += UInt64(answer.body.count)
                    }
                    record(false)
                    report()
                    got = true
                    break
                }
                if !got { failed.withLock { $0.append(c) } }
            }
        }
        record(true)
        // Chunks never tried (cancelled) are left for the next attempt, with the origin's.
        let tried = next.withLock { min($0, chunks.count) }
        let untried = chunks[tried...].map(\.chunk)
        return (
            done.value, written.withLock { $0.count },
            Dictionary(uniqueKeysWithValues: banned.withLock { $0 }.map { (peers[$0.key].absoluteString, $0.value) }),
            failed.withLock { $0 } + untried
        )
    }
}
