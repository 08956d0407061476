import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotHTTPClient
import BacklotZstd
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

extension PackInstaller {
    /// Phase 3: fetches `missing` chunks in runs of adjacent chunks (``plan(_:index:)``), up to
    /// ``connections`` at once, each connection walking its own part of the pack (``RangeLanes``), decompresses each into a buffer of its declared size, checks it
    /// against its ID (``PackReader/decode(_:chunk:chunkIndex:dictionary:using:source:)``) and
    /// writes it where it goes. Progress counts the bytes downloaded, piece by piece, against the bytes there are to
    /// download (not the installed size), and ends at 100 %.
    ///
    /// Progress is recorded every 8 MiB of chunks, or a quarter of a second after the last record,
    /// rather than every run: each record is a flushed transaction that the other download threads
    /// wait behind, and a slow download still shows (and keeps) its progress as it goes. After a
    /// crash only the chunks not yet recorded are fetched again (and recorded ones are re-hashed).
    /// - Returns: the bytes downloaded.
    /// - Throws: ``BacklotError/Code/cancelled`` once `isCancelled` says so (checked at every piece
    ///   of a run as it arrives), the first failure of any run (what was written is recorded for
    ///   the next attempt).
    func fetchChunks(
        _ missing: [Int], _ plan: InstallPlan, _ folder: PreparedFolder, files: OpenFiles, id: String,
        progress: (@Sendable (UInt64, UInt64) -> Void)?, isCancelled: @escaping @Sendable () -> Bool
    ) throws -> UInt64 {
        let index = plan.index
        let url = plan.url
        let digest = plan.digest
        let runs = self.plan(missing, index: index)
        let spans = runs.map { run in
            index.chunks[run.last!].offset + UInt64(index.chunks[run.last!].compressedSize)
                - index.chunks[run.first!].offset
        }
        let downloadTotal = spans.reduce(0, +)
        let largestChunk = missing.lazy.map { Int(index.chunks[$0].uncompressedSize) }.max() ?? 0
        progress?(0, downloadTotal)
        let lanes = RangeLanes(count: runs.count, connections: connections)
        let failure = Mutex<(any Error)?>(nil)
        let fetched = AtomicBytes()
        let container = self.container
        let placements = folder.placements
        let unrecorded = Mutex<(chunks: [Int], bytes: UInt64, since: ContinuousClock.Instant)>(([], 0, .now))
        Self.onThreads(lanes.count) { lane in
            let decompressor = ZstdDecompressor()
            // Every chunk is decoded into one buffer (a block allocated and zeroed a chunk was a
            // mapping and its page faults each time, with large blocks mapped on their own).
            let plain = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, largestChunk), alignment: 16)
            defer { plain.deallocate() }
            while true {
                if failure.withLock({ $0 != nil }) { return }
                if isCancelled() {
                    failure.withLock { $0 = $0 ?? BacklotError(.cancelled, "the download of \(id) was cancelled") }
                    return
                }
                guard let i = lanes.next(for: lane) else { return }
                let run = runs[i]
                let last = index.chunks[run.last!]
                let end = last.offset + UInt64(last.compressedSize)
                // The run's frames are decoded and written as they arrive (``RunReceiver``); a
                // retry asks for what is left from the first chunk not yet written.
                var receiver = RunReceiver(run: run, chunks: index.chunks)
                var received: UInt64 = 0
                do {
                    try self.withRetries(url) {
                        let from = receiver.resume()
                        var bytes: UInt64 = 0
                        defer { received += bytes }
                        try self.streamRange(url, from, end - 1) { piece in
                            // A cancel stops the run at its next piece, what arrived before it kept.
                            if isCancelled() { throw BacklotError(.cancelled, "the download of \(id) was cancelled") }
                            bytes += UInt64(piece.count)
                            progress?(fetched.add(UInt64(piece.count)), downloadTotal)
                            try receiver.receive(piece) { c, frame in
                                let decoded = try PackReader.decode(
                                    frame, chunk: index.chunks[c], chunkIndex: c, dictionary: index.dictionary,
                                    using: decompressor, source: url, into: plain)
                                for p in placements[c] { try files.account(p, writing: decoded) }
                            }
                        }
                        guard receiver.isComplete else {
                            throw BacklotError(
                                .io, "the server sent \(bytes) bytes for a range of \(end - from)", context: url)
                        }
                    }
                } catch {
                    failure.withLock { $0 = $0 ?? error }
                }
                // What was written is recorded, all of the run or the chunks before a failure.
                let written = Array(run[..<receiver.next])
                let due = unrecorded.withLock { u -> [Int]? in
                    u.chunks += written
                    u.bytes += received
                    guard u.bytes >= 8 << 20 || ContinuousClock.now - u.since >= .milliseconds(250) else {
                        return nil
                    }
                    defer { u = ([], 0, .now) }
                    return u.chunks
                }
                if let due {
                    do { try container.recordChunks(digest, due) } catch { failure.withLock { $0 = $0 ?? error } }
                }
            }
        }
        let rest = unrecorded.withLock { u -> [Int] in
            defer { u = ([], 0, .now) }
            return u.chunks
        }
        if let error = failure.withLock({ $0 }) {
            try? container.recordChunks(digest, rest)  // what was written is kept for the next attempt
            throw error
        }
        try container.recordChunks(digest, rest)
        // Ends at 100 % even with nothing left to fetch whole (every chunk came from a delta): a
        // progress of 0 of 0 never finishes, and `fetch` waits for its bar to.
        progress?(max(1, downloadTotal), max(1, downloadTotal))
        return fetched.value
    }

    /// Groups sorted missing chunks into runs of adjacent chunks (gaps up to `mergeGap` are fetched
    /// and thrown away), each at most `maximumRangeBytes`.
    func plan(_ missing: [Int], index: PackIndex) -> [[Int]] {
        var runs: [[Int]] = []
        var current: [Int] = []
        var start: UInt64 = 0
        var end: UInt64 = 0
        for c in missing.sorted(by: { index.chunks[$0].offset < index.chunks[$1].offset }) {
            let chunk = index.chunks[c]
            if !current.isEmpty, chunk.offset <= end + mergeGap,
                chunk.offset + UInt64(chunk.compressedSize) - start <= maximumRangeBytes
            {
                current.append(c)
            } else {
                if !current.isEmpty { runs.append(current) }
                current = [c]
                start = chunk.offset
            }
            end = chunk.offset + UInt64(chunk.compressedSize)
        }
        if !current.isEmpty { runs.append(current) }
        return runs
    }

    /// One Range request whose answer (206, at most the bytes asked for) is handed to `receive`
    /// as it arrives (``HTTPClient/send(_:_:headers:expectedBodySize:streaming:to:)``); the caller
    /// checks that all of it came.
    /// - Throws: ``RetryLater`` for a 503 or 429 with `Retry-After`; ``BacklotError/Code/io`` for
    ///   another answer, more bytes than asked, a broken transfer; what `receive` throws.
    func streamRange(
        _ url: String, _ first: UInt64, _ last: UInt64, receive: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let r = try http.send(
            "GET", url, headers: ["Range": "bytes=\(first)-\(last)"], expectedBodySize: Int(last - first + 1),
            streaming: 206, to: receive)
        try checkRangeAnswer(r, url: url, first: first, last: last)
    }

    /// One Range request; the answer must be 206 with exactly the bytes asked for.
    func range(_ url: String, _ first: UInt64, _ last: UInt64) throws -> [UInt8] {
        let r = try http.send(
            "GET", url, headers: ["Range": "bytes=\(first)-\(last)"], expectedBodySize: Int(last - first + 1))
        try checkRangeAnswer(r, url: url, first: first, last: last)
        guard UInt64(r.body.count) == last - first + 1 else {
            throw BacklotError(
                .io, "the server sent \(r.body.count) bytes for a range of \(last - first + 1)", context: url)
        }
        return r.body
    }

    /// A Range answer's status: 206, or a 503/429 with `Retry-After` (``RetryLater``), and no more
    /// bytes than asked for.
    private func checkRangeAnswer(_ r: HTTPClient.Response, url: String, first: UInt64, last: UInt64) throws {
        guard r.status == 206 else {
            if r.status == 503 || r.status == 429,
                let after = r.headers["retry-after"].flatMap({ CheckedInteger.parse($0, as: Int.self) }), after >= 0
            {
                throw RetryLater(seconds: min(after, 60), status: r.status, url: url)
            }
            throw BacklotError(
                .io,
                r.status == 200
                    ? "the server ignored the Range request (200 instead of 206)" : "the archive answered \(r.status)",
                context: url, hint: "the server must support HTTP Range requests")
        }
        guard !r.exceededExpectedSize else {
            throw BacklotError(
                .io, "the server sent more than the \(last - first + 1) bytes asked for; the transfer was stopped",
                context: url)
        }
    }

    /// ``range(_:_:_:)`` with retries: exponential backoff with jitter on transport failures, and
    /// a 503 or 429's `Retry-After` waited out (with jitter) before trying again.
    func rangeWithRetries(_ url: String, _ first: UInt64, _ last: UInt64) throws -> [UInt8] {
        try withRetries(url) { try range(url, first, last) }
    }

    /// Runs `body` until it succeeds, at most ``retries`` times more: after a transport failure
    /// (``BacklotError/Code/io``) with exponential backoff and jitter, after a ``RetryLater`` once
    /// its `Retry-After` has passed (with jitter). Other errors are thrown at once.
    func withRetries<T>(_ url: String, _ body: () throws -> T) throws -> T {
        var attempt = 0
        while true {
            do { return try body() } catch let e as RetryLater {
                guard attempt < retries else {
                    throw BacklotError(
                        .io, "the server kept answering \(e.status) (Retry-After)", context: url,
                        hint: "try again later")
                }
                attempt += 1
                // Waited out, plus up to half again at random: devices a busy server turned away
                // at the same moment do not all come back at the same moment.
                usleep(useconds_t(Double(e.seconds) * Double.random(in: 1...1.5) * 1_000_000))
            } catch let e as BacklotError where e.code == .io && attempt < retries {
                attempt += 1
                usleep(useconds_t(Double(100_000 << attempt) * Double.random(in: 0.5...1.5)))
            }
        }
    }
}

/// A server asked to come back later (503 or 429 with `Retry-After`).
struct RetryLater: Error {
    let seconds: Int
    let status: Int
    let url: String
}
