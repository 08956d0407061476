import BacklotBasics
import BacklotFormat

/// The chunks of one run (adjacent missing chunks fetched with one Range request) taken from its
/// answer as it arrives: each frame is handed on as soon as its last byte is in, straight from the
/// piece libcurl received when it lies whole in it, else from a buffer the size of one frame; the
/// bytes of a merged gap between two frames are skipped. A connection so holds one frame, not the
/// run's 2 MiB body (a 4 GiB install peaked 7 MiB lower).
///
/// A transfer cut short leaves ``next`` at the first chunk not handed on: the retry asks from that
/// chunk's offset (``resume()``), and no chunk is handed on twice.
///
/// ```swift
/// var receiver = RunReceiver(run: [3, 4, 5], chunks: index.chunks)
/// receiver.resume()
/// try receiver.receive(piece) { chunkNumber, frame in try decode(frame) }
/// ```
struct RunReceiver {
    /// The run's chunk numbers, by offset in the pack.
    let run: [Int]
    let chunks: [PackIndex.Chunk]
    /// The first chunk of the run (an index into ``run``) not handed on yet.
    private(set) var next = 0
    /// The pack offset of the next byte to arrive (of a frame being buffered: its start).
    private var position: UInt64 = 0
    /// The start of a frame cut between two pieces.
    private var pending: [UInt8] = []

    init(run: [Int], chunks: [PackIndex.Chunk]) {
        self.run = run
        self.chunks = chunks
        pending.reserveCapacity(run.lazy.map { Int(chunks[$0].compressedSize) }.max() ?? 0)
        resume()
    }

    /// Whether every chunk of the run has been handed on.
    var isComplete: Bool { next == run.count }

    /// The pack offset the next request starts at: the first chunk not handed on yet. What a cut
    /// transfer left of a frame is dropped.
    @discardableResult
    mutating func resume() -> UInt64 {
        pending.removeAll(keepingCapacity: true)
        position = isComplete ? 0 : chunks[run[next]].offset
        return position
    }

    /// Takes the next piece of the answer; calls `frame` with each chunk whose bytes are all in.
    /// Bytes past the run's last chunk are refused.
    mutating func receive(
        _ piece: UnsafeRawBufferPointer, frame: (Int, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        var rest = piece[...]
        while !rest.isEmpty {
            guard !isComplete else {
                throw BacklotError(.io, "the server sent more bytes than the range asked for")
            }
            let chunk = chunks[run[next]]
            if position < chunk.offset {
                let skipped = Int(min(chunk.offset - position, UInt64(rest.count)))
                rest = rest.dropFirst(skipped)
                position += UInt64(skipped)
                continue
            }
            let size = Int(chunk.compressedSize)
            if pending.isEmpty && rest.count >= size {
                try frame(run[next], UnsafeRawBufferPointer(rebasing: rest.prefix(size)))
                rest = rest.dropFirst(size)
            } else {
                let taken = min(size - pending.count, rest.count)
                pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: rest.prefix(taken)))
                rest = rest.dropFirst(taken)
                guard pending.count == size else { continue }
                try pending.withUnsafeBytes { try frame(run[next], $0) }
                pending.removeAll(keepingCapacity: true)
            }
            position += UInt64(size)
            next += 1
        }
    }
}
