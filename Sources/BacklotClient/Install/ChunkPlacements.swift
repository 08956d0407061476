import BacklotFormat

/// Where one chunk's bytes go: a file (by its number in the index) and an offset in it.
struct Placement: Sendable, Equatable {
    let file: Int32
    let offset: UInt64
}

/// Where each chunk of a release is written: every (file, offset) of every chunk, grouped by
/// chunk in one flat array with the start of each chunk's group, instead of an array per chunk
/// (48 bytes each before its first placement: 200,000 chunks, 10 MB).
///
/// ```swift
/// let placements = ChunkPlacements(index: index) { !linked.contains($0) }
/// for p in placements[7] { try files.account(p, writing: bytes) }
/// ```
struct ChunkPlacements: Sendable {
    /// `starts[c]..<starts[c + 1]` are chunk `c`'s placements in `all`.
    private let starts: [Int32]
    private let all: [Placement]
    /// How many chunk writes each file (by number) receives.
    let perFile: [Int32]

    /// The placements of the chunks of the files of `index` for which `including` (given the
    /// file's number) is true, in file order within each chunk.
    init(index: PackIndex, including: (Int) -> Bool) {
        var counts = [Int32](repeating: 0, count: index.chunks.count + 1)
        var perFile = [Int32](repeating: 0, count: index.files.count)
        for (number, file) in index.files.enumerated() where including(number) {
            for c in file.chunks { counts[c + 1] += 1 }
            perFile[number] = Int32(file.chunks.count)
        }
        for c in 0..<index.chunks.count { counts[c + 1] += counts[c] }
        var next = counts
        var all = [Placement](repeating: Placement(file: 0, offset: 0), count: Int(counts[index.chunks.count]))
        for (number, file) in index.files.enumerated() where perFile[number] > 0 {
            var offset: UInt64 = 0
            for c in file.chunks {
                all[Int(next[c])] = Placement(file: Int32(number), offset: offset)
                next[c] += 1
                offset += UInt64(index.chunks[c].uncompressedSize)
            }
        }
        self.starts = counts
        self.all = all
        self.perFile = perFile
    }

    /// Chunk `chunk`'s placements (empty when no file being written needs it).
    subscript(chunk: Int) -> ArraySlice<Placement> { all[Int(starts[chunk])..<Int(starts[chunk + 1])] }

    /// The number of chunks.
    var chunkCount: Int { starts.count - 1 }
}
