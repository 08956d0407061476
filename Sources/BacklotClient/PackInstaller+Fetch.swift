import BacklotBasics
import BacklotCrypto
import BacklotFormat
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
    /// writes it where it goes. Progress counts the bytes downloaded against the bytes there are to
    /// download (not the installed size), and ends at 100 %.
    ///
    /// Progress is recorded every 8 MiB of chunks, or a quarter of a second after the last record,
    /// rather than every run: each record is a flushed transaction that the other download threads
    /// wait behind, and a slow download still shows (and keeps) its progress as it goes. After a
    /// crash only the chunks not yet recorded are fetched again (and recorded ones are re-hashed).
    /// - Returns: the bytes downloaded.
    /// - Throws: ``BacklotError/Code/cancelled`` once `isCancelled` says so (checked between runs),
    ///   the first failure of any run (what was written is recorded for the next attempt).
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
        let largestRun = Int(clamping: spans.max() ?? 0)
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
            // Each connection's Range bodies are written into the same memory, one after another,
            // sized once for the largest run: a buffer that grew run after run left the smaller
            // ones freed between the long-lived ones, and the allocator's heap grew by a body at a
            // time (measured: +6 MiB over a 4 GiB install).
            var spare: [UInt8] = []
            spare.reserveCapacity(largestRun)
            // And every chunk is decoded into one buffer (a block allocated and zeroed a chunk
            // was a mapping and its page faults each time, with large blocks mapped on their own).
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
                do {
                    let first = index.chunks[run.first!]
                    let last = index.chunks[run.last!]
                    let body = try self.rangeWithRetries(
                        url, first.offset, last.offset + UInt64(last.compressedSize) - 1, reusing: &spare)
                    progress?(fetched.add(UInt64(body.count)), downloadTotal)
                    try body.withUnsafeBytes { bytes in
                        for c in run {
                            let chunk = index.chunks[c]
                            let start = Int(chunk.offset - first.offset)
                            // Decoded where it lies in the body: no copy of each chunk's bytes.
                            let decoded = try PackReader.decode(
                                UnsafeRawBufferPointer(rebasing: bytes[start..<start + Int(chunk.compressedSize)]),
                                chunk: chunk, chunkIndex: c, dictionary: index.dictionary, using: decompressor,
                                source: url, into: plain)
                            for p in placements[c] { try files.account(p, writing: decoded) }
                        }
                    }
                    spare = body
                    let due = unrecorded.withLock { u -> [Int]? in
                        u.chunks += run
                        u.bytes += UInt64(body.count)
                        guard u.bytes >= 8 << 20 || ContinuousClock.now - u.since >= .milliseconds(250) else {
                            return nil
                        }
                        defer { u = ([], 0, .now) }
                        return u.chunks
                    }
                    if let due { try container.recordChunks(digest, due) }
                } catch {
                    failure.withLock { $0 = $0 ?? error }
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

    /// One Range request; the answer must be 206 with exactly the bytes asked for.
    /// - Parameter storage: memory to write the body into (``HTTPClient/send(_:_:headers:body:expectedBodySize:bodyLimit:progress:reusing:)``).
    func range(_ url: String, _ first: UInt64, _ last: UInt64, reusing storage: inout [UInt8]) throws -> [UInt8] {
        let r = try http.send(
            "GET", url, headers: ["Range": "bytes=\(first)-\(last)"], expectedBodySize: Int(last - first + 1),
            reusing: &storage)
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
        guard UInt64(r.body.count) == last - first + 1 else {
            throw BacklotError(
                .io, "the server sent \(r.body.count) bytes for a range of \(last - first + 1)", context: url)
        }
        return r.body
    }

    /// ``range(_:_:_:reusing:)`` into memory of its own.
    func range(_ url: String, _ first: UInt64, _ last: UInt64) throws -> [UInt8] {
        var storage: [UInt8] = []
        return try range(url, first, last, reusing: &storage)
    }

    /// ``range(_:_:_:)`` with retries: exponential backoff with jitter on transport failures, and
    /// a 503 or 429's `Retry-After` waited out (with jitter) before trying again.
    func rangeWithRetries(_ url: String, _ first: UInt64, _ last: UInt64) throws -> [UInt8] {
        var storage: [UInt8] = []
        return try rangeWithRetries(url, first, last, reusing: &storage)
    }

    /// ``rangeWithRetries(_:_:_:)`` writing into `storage`'s memory (``range(_:_:_:reusing:)``).
    func rangeWithRetries(
        _ url: String, _ first: UInt64, _ last: UInt64, reusing storage: inout [UInt8]
    ) throws
        -> [UInt8]
    {
        var attempt = 0
        while true {
            do { return try range(url, first, last, reusing: &storage) } catch let e as RetryLater {
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
