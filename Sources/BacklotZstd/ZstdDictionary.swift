import BacklotBasics
import CZstd
import Synchronization

/// A zstd dictionary: bytes that many small inputs have in common (their vocabulary, headers,
/// structure), given to the compressor and the decompressor so that each small frame does not
/// have to learn them again. A 4 KB text file compressed on its own finds few repeats; against
/// a dictionary trained on its neighbours it compresses about as well as inside a tar.zst.
///
/// The decoding tables are made once, when the dictionary is made, and are shared read-only by
/// every thread that decompresses with it.
///
/// ```swift
/// if let dictionary = ZstdDictionary.train(samples: texts, capacity: 112 << 10) {
///     let frame = try ZstdCompressor(level: 3, dictionary: dictionary).compress(text)
///     let back = try ZstdDecompressor().decompress(frame, expectedSize: text.count, dictionary: dictionary)
/// }
/// ```
// Safe because: every field is `let`; `decodingTables` is a `ZSTD_DDict` zstd documents as read-only and shareable
// once made, and the `ZSTD_CDict`s are made under `encodingTables`' `Mutex` and read-only afterwards
// (`ZstdDictionaryTests.oneDictionaryIsSharedByThreadsAtOnce`).
public final class ZstdDictionary: @unchecked Sendable, Hashable {
    /// The dictionary, as stored (zstd's dictionary format: magic `0xEC30A437`, ID, entropy
    /// tables, content).
    public let bytes: [UInt8]
    /// The dictionary's ID (never 0: a trained dictionary has one).
    public let id: UInt32
    /// The decoding tables, made once and never written again (zstd's `ZSTD_DDict` is safe to
    /// share between threads), which is what makes this class `Sendable`.
    let decodingTables: OpaquePointer
    /// The compression tables, made on first use for each level and shared by every compressor
    /// (a `ZSTD_CDict` is read-only once made; making one costs about a millisecond).
    private let encodingTables = Mutex<[Int32: OpaquePointer]>([:])

    /// The smallest dictionary zstd's format allows (magic, ID and the entropy tables).
    public static let minimumSize = 8

    /// Reads a dictionary made by ``train(samples:capacity:)`` (or `zstd --train`).
    /// - Throws: ``BacklotError/Code/corruptArchive`` when the bytes are not a zstd dictionary
    ///   with an ID, or zstd cannot build its tables from them.
    public init(bytes: [UInt8]) throws {
        guard bytes.count >= Self.minimumSize,
            bytes.prefix(4).elementsEqual([0x37, 0xA4, 0x30, 0xEC])
        else {
            throw BacklotError(
                .corruptArchive,
                "the \(bytes.count) bytes are not a zstd dictionary (they do not start with 37 A4 30 EC)")
        }
        let id = bytes.withUnsafeBytes { ZDICT_getDictID($0.baseAddress, $0.count) }
        guard id != 0 else { throw BacklotError(.corruptArchive, "the zstd dictionary has no ID") }
        guard let tables = bytes.withUnsafeBytes({ ZSTD_createDDict($0.baseAddress, $0.count) }) else {
            throw BacklotError(.corruptArchive, "zstd cannot read the dictionary (its entropy tables are invalid)")
        }
        self.bytes = bytes
        self.id = id
        self.decodingTables = tables
    }

    deinit {
        ZSTD_freeDDict(decodingTables)
        encodingTables.withLock { for tables in $0.values { ZSTD_freeCDict(tables) } }
    }

    /// The compression tables at `level`, made once.
    func compressionTables(level: Int32) -> OpaquePointer {
        encodingTables.withLock { tables in
            if let made = tables[level] { return made }
            guard let made = bytes.withUnsafeBytes({ ZSTD_createCDict($0.baseAddress, $0.count, level) }) else {
                fatalError("zstd could not allocate the compression tables of a dictionary it had read")
            }
            tables[level] = made
            return made
        }
    }

    /// Trains a dictionary of at most `capacity` bytes on `samples`, deterministically (zstd's
    /// fastCover with fixed parameters, one thread): the same samples give the same bytes.
    /// Returns nil when zstd finds nothing to learn (too few or too small samples).
    ///
    /// zstd advises samples of about a hundred times the capacity in all, a few thousand of them.
    public static func train(samples: [[UInt8]], capacity: Int) -> ZstdDictionary? {
        var joined: [UInt8] = []
        joined.reserveCapacity(samples.reduce(0) { $0 + $1.count })
        for s in samples { joined += s }
        return train(joined: joined, sizes: samples.map(\.count), capacity: capacity)
    }

    /// ``train(samples:capacity:)`` of samples laid end to end in `joined`, `sizes` their lengths
    /// in order (no copy of them is made).
    public static func train(joined: [UInt8], sizes: [Int], capacity: Int) -> ZstdDictionary? {
        guard !sizes.isEmpty, capacity >= 1024, let count = UInt32(exactly: sizes.count),
            sizes.reduce(0, +) == joined.count
        else { return nil }
        var output = [UInt8](repeating: 0, count: capacity)
        var parameters = ZDICT_fastCover_params_t()
        parameters.k = 2048
        parameters.d = 8
        parameters.f = 20
        parameters.steps = 0
        parameters.nbThreads = 1
        parameters.splitPoint = 1.0
        // 4 rather than 1: less time training (where packaging many small files waits for it), for packs of the
        // same size to 0.1 % on the four mixes of scripts/bench-small (docs/benchmarks.md, "Many small files").
        parameters.accel = 4
        parameters.zParams.compressionLevel = 3
        let produced = output.withUnsafeMutableBytes { out in
            joined.withUnsafeBytes { input in
                sizes.withUnsafeBufferPointer { sizes in
                    ZDICT_trainFromBuffer_fastCover(
                        out.baseAddress, out.count, input.baseAddress, sizes.baseAddress, count, parameters)
                }
            }
        }
        guard ZDICT_isError(produced) == 0, produced >= minimumSize else { return nil }
        output.removeSubrange(produced...)
        return try? ZstdDictionary(bytes: output)
    }

    public static func == (a: ZstdDictionary, b: ZstdDictionary) -> Bool { a.bytes == b.bytes }
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }
}
