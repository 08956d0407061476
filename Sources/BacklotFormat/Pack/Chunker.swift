import BacklotBasics

/// Content-defined chunking with a FastCDC-style gear hash and normalised chunking.
///
/// Cut points depend only on content, so an edit moves the boundaries near it and leaves the rest
/// of a file's chunks — and their IDs — unchanged. The exact rule is in `docs/format.md` §6.
///
/// ```swift
/// let chunker = Chunker(averageSize: 64 << 10)
/// var start = 0
/// while start < data.count {
///     let length = data.withUnsafeBytes { chunker.cutPoint(in: UnsafeRawBufferPointer(rebasing: $0[start...])) }
///     start += length
/// }
/// ```
public struct Chunker: Sendable, Hashable {
    /// Chunks are at least this long (except a file's last).
    public let minimumSize: Int
    /// The target average length (a power of two).
    public let averageSize: Int
    /// Chunks are at most this long.
    public let maximumSize: Int
    private let smallMask: UInt64
    private let largeMask: UInt64

    /// The default: 64 KiB average, 16 KiB minimum, 256 KiB maximum (see docs/benchmarks.md).
    public static let defaultAverageSize = 64 << 10
    /// Average sizes accepted: 4 KiB to 1 MiB (so chunks stay within the format's 4 MiB).
    public static let averageSizeRange = (4 << 10)...(1 << 20)

    /// Makes a chunker; `averageSize` must be a power of two in ``averageSizeRange``.
    public init(averageSize: Int = Chunker.defaultAverageSize) {
        precondition(
            averageSize.nonzeroBitCount == 1 && Chunker.averageSizeRange.contains(averageSize),
            "average chunk size must be a power of two between 4 KiB and 1 MiB")
        self.averageSize = averageSize
        minimumSize = averageSize / 4
        maximumSize = averageSize * 4
        let bits = averageSize.trailingZeroBitCount
        smallMask = Chunker.topMask(bits: bits + 2)
        largeMask = Chunker.topMask(bits: bits - 2)
    }

    private static func topMask(bits: Int) -> UInt64 { ~(UInt64.max >> UInt64(bits)) }

    /// The gear table: SplitMix64 outputs seeded with "backlot!".
    static let gear: [UInt64] = {
        var state: UInt64 = 0x6261_636b_6c6f_7421
        return (0..<256).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }()

    /// The length of the chunk that starts at the beginning of `data`.
    ///
    /// `data` must hold at least ``maximumSize`` bytes unless it is the rest of the file.
    public func cutPoint(in data: UnsafeRawBufferPointer) -> Int {
        let n = data.count
        if n <= minimumSize { return n }
        let limit = min(n, maximumSize)
        let normal = min(averageSize, limit)
        let bytes = data.bindMemory(to: UInt8.self)
        return Chunker.gear.withUnsafeBufferPointer { g in
            var hash: UInt64 = 0
            var i = minimumSize
            // Two bytes a step: the hash two bytes on is 4h + 2·G[b₀] + G[b₁], one shift and one
            // addition after h where one byte a step chained two of each; the hash between
            // (2h + G[b₀]) is tested on the side. The same cuts as one byte a step
            // (`ChunkerTests.twoBytesAStepCutWhereOneByteAStepDoes`).
            func run(to end: Int, mask: UInt64) -> Int? {
                while i + 1 < end {
                    let first = g[Int(bytes[i])]
                    let second = g[Int(bytes[i + 1])]
                    let between = (hash << 1) &+ first
                    hash = (hash << 2) &+ ((first << 1) &+ second)
                    if between & mask == 0 { return i + 1 }
                    if hash & mask == 0 { return i + 2 }
                    i += 2
                }
                if i < end {
                    hash = (hash << 1) &+ g[Int(bytes[i])]
                    i += 1
                    if hash & mask == 0 { return i }
                }
                return nil
            }
            return run(to: normal, mask: smallMask) ?? run(to: limit, mask: largeMask) ?? limit
        }
    }
}
