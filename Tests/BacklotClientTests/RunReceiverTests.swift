import BacklotBasics
import BacklotCrypto
import BacklotFormat
import Testing

@testable import BacklotClient

/// A run's Range answer taken as it arrives, in pieces of any size: every frame is handed on once,
/// whole and in order, the bytes of merged gaps are skipped, and a transfer cut anywhere resumes at
/// the first chunk not handed on.
@Suite struct RunReceiverTests {
    /// A pack region of `count` frames of 1..300 bytes, with gaps of 0..40 bytes between some.
    static func region(_ g: inout SeededGenerator, count: Int) -> (bytes: [UInt8], chunks: [PackIndex.Chunk]) {
        var bytes = g.bytes(Int(g.next() % 50))  // what lies before the run's first frame
        var chunks: [PackIndex.Chunk] = []
        for _ in 0..<count {
            if g.next() % 3 == 0 { bytes += g.bytes(Int(g.next() % 41)) }
            let size = 1 + Int(g.next() % 300)
            chunks.append(
                PackIndex.Chunk(
                    id: SHA256.hash([UInt8(chunks.count & 0xFF)]), offset: UInt64(bytes.count),
                    compressedSize: UInt32(size), uncompressedSize: UInt32(size)))
            bytes += g.bytes(size)
        }
        return (bytes, chunks)
    }

    /// Feeds `stream` (the answer from `from` on) in random pieces until `cut` bytes, collecting frames.
    static func feed(
        _ receiver: inout RunReceiver, _ bytes: [UInt8], from: UInt64, upTo cut: Int, _ g: inout SeededGenerator,
        into frames: inout [Int: [UInt8]]
    ) throws {
        var at = Int(from)
        while at < cut {
            let n = min(cut - at, 1 + Int(g.next() % 700))
            try bytes[at..<at + n].withUnsafeBytes { piece in
                try receiver.receive(piece) { c, frame in
                    #expect(frames[c] == nil, "chunk \(c) handed on twice")
                    frames[c] = Array(frame)
                }
            }
            at += n
        }
    }

    @Test func everyFrameIsHandedOnOnceWholeWhereverThePiecesAndCutsFall() throws {
        var g = SeededGenerator.fromEnvironment()
        print("everyFrameIsHandedOnOnceWholeWhereverThePiecesAndCutsFall seed: \(g.seed)")
        for _ in 0..<200 {
            let (bytes, chunks) = Self.region(&g, count: 1 + Int(g.next() % 12))
            let run = Array(chunks.indices)
            let end = Int(chunks.last!.offset) + Int(chunks.last!.compressedSize)
            var receiver = RunReceiver(run: run, chunks: chunks)
            var frames: [Int: [UInt8]] = [:]
            // Up to three transfers cut short at random places, then one to the end.
            for _ in 0..<Int(g.next() % 4) where !receiver.isComplete {
                let from = receiver.resume()
                let cut = Int(from) + Int(g.next() % UInt64(end - Int(from) + 1))
                try Self.feed(&receiver, bytes, from: from, upTo: cut, &g, into: &frames)
            }
            if !receiver.isComplete {
                let from = receiver.resume()
                #expect(from == chunks[run[receiver.next]].offset)
                try Self.feed(&receiver, bytes, from: from, upTo: end, &g, into: &frames)
            }
            #expect(receiver.isComplete)
            for (c, chunk) in chunks.enumerated() {
                #expect(frames[c] == Array(bytes[Int(chunk.offset)..<Int(chunk.offset) + Int(chunk.compressedSize)]))
            }
        }
    }

    @Test func bytesPastTheRunsLastFrameAreRefused() throws {
        var g = SeededGenerator(seed: 7)
        let (bytes, chunks) = Self.region(&g, count: 3)
        var receiver = RunReceiver(run: [0, 1, 2], chunks: chunks)
        let end = Int(chunks[2].offset) + Int(chunks[2].compressedSize)
        let more = Array(bytes[Int(chunks[0].offset)..<end]) + [0x42]
        #expect(throws: BacklotError.self) {
            try more.withUnsafeBytes { try receiver.receive($0) { _, _ in } }
        }
    }

    /// A run that is only some of the chunks (the others are reused) skips what lies between them.
    @Test func chunksLeftOutOfTheRunAreSkipped() throws {
        var g = SeededGenerator(seed: 11)
        let (bytes, chunks) = Self.region(&g, count: 5)
        var receiver = RunReceiver(run: [1, 3], chunks: chunks)
        var frames: [Int: [UInt8]] = [:]
        let end = Int(chunks[3].offset) + Int(chunks[3].compressedSize)
        try Self.feed(&receiver, bytes, from: receiver.resume(), upTo: end, &g, into: &frames)
        #expect(receiver.isComplete)
        #expect(frames.keys.sorted() == [1, 3])
        #expect(frames[3] == Array(bytes[Int(chunks[3].offset)..<end]))
    }
}
