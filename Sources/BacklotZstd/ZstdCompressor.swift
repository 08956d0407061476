import BacklotBasics
import CZstd

/// Compresses buffers into single zstd frames. Not thread-safe: give each worker its own.
///
/// Output is deterministic for a given input, level, dictionary and libzstd version: no threads,
/// no checksum (Backlot checks content with SHA-256), content size recorded in the frame header.
/// With a ``ZstdDictionary``, every frame is compressed against it and records no dictionary ID
/// (the reader knows which dictionary its frames need: a pack holds one).
///
/// ```swift
/// let compressor = ZstdCompressor(level: 3)
/// let frame = try compressor.compress(bytes)
/// ```
public final class ZstdCompressor {
    private let context: OpaquePointer
    /// The dictionary's compression tables at ``level`` (a `ZSTD_CDict` the dictionary owns and
    /// keeps while this compressor holds it), when there is one.
    private let dictionaryTables: OpaquePointer?
    /// The compression level (1…19; 3 is zstd's default).
    public let level: Int32
    /// The dictionary every frame is compressed against, if any.
    public let dictionary: ZstdDictionary?

    public init(level: Int32 = 3, dictionary: ZstdDictionary? = nil) {
        guard let ctx = ZSTD_createCCtx() else { fatalError("zstd could not allocate a compression context") }
        context = ctx
        self.level = level
        self.dictionary = dictionary
        dictionaryTables = dictionary?.compressionTables(level: level)
        ZSTD_CCtx_setParameter(ctx, ZSTD_c_compressionLevel, level)
        ZSTD_CCtx_setParameter(ctx, ZSTD_c_checksumFlag, 0)
        ZSTD_CCtx_setParameter(ctx, ZSTD_c_contentSizeFlag, 1)
    }

    deinit { ZSTD_freeCCtx(context) }

    /// The valid levels.
    public static var levelRange: ClosedRange<Int32> { 1...ZSTD_maxCLevel() }

    /// Compresses `input` into one frame.
    public func compress(_ input: UnsafeRawBufferPointer) throws -> [UInt8] {
        let bound = ZSTD_compressBound(input.count)
        // Not zeroed first (a memset of every frame's bound, and its pages touched twice): only
        // the bytes zstd wrote are ever part of the array.
        return try [UInt8](unsafeUninitializedCapacity: bound) { out, count in
            count = 0
            let written: Int
            if let dictionaryTables {
                // Content size recorded, no checksum, no dictionary ID: 1–4 bytes less a frame.
                let frame = ZSTD_frameParameters(contentSizeFlag: 1, checksumFlag: 0, noDictIDFlag: 1)
                written = ZSTD_compress_usingCDict_advanced(
                    context, out.baseAddress, bound, input.baseAddress, input.count, dictionaryTables, frame)
            } else {
                written = ZSTD_compress2(context, out.baseAddress, bound, input.baseAddress, input.count)
            }
            if ZSTD_isError(written) != 0 {
                throw BacklotError(.library, "zstd compression failed: \(String(cString: ZSTD_getErrorName(written)))")
            }
            count = written
        }
    }

    /// Compresses `input` into one frame.
    public func compress(_ input: [UInt8]) throws -> [UInt8] {
        try input.withUnsafeBytes { try compress($0) }
    }

    /// Compresses `input` into one frame that refers to `prefix` (a *reference prefix*, zstd's
    /// `ZSTD_CCtx_refPrefix`): matches may point into `prefix`, so an input that resembles it —
    /// a new version of a chunk against the old one — takes a few bytes. The frame can only be
    /// decompressed with the very same `prefix` (``ZstdDecompressor/decompress(_:prefix:expectedSize:)``);
    /// it records no dictionary ID, so a wrong prefix gives wrong bytes, which the caller's
    /// SHA-256 check of the result catches. The prefix is used for this frame only.
    ///
    /// ```swift
    /// let delta = try ZstdCompressor().compress(newChunk, prefix: oldChunk)
    /// ```
    /// - Throws: ``BacklotError/Code/library`` when zstd refuses (a prefix over 2 GiB).
    public func compress(_ input: UnsafeRawBufferPointer, prefix: UnsafeRawBufferPointer) throws -> [UInt8] {
        let status = ZSTD_CCtx_refPrefix(context, prefix.baseAddress, prefix.count)
        if ZSTD_isError(status) != 0 {
            throw BacklotError(
                .library, "zstd refused the reference prefix: \(String(cString: ZSTD_getErrorName(status)))")
        }
        // The window must reach back over the whole prefix (and the input) for matches into it.
        let needed = max(
            10, Int32((prefix.count + input.count).bitWidth - (prefix.count + input.count).leadingZeroBitCount))
        ZSTD_CCtx_setParameter(context, ZSTD_c_windowLog, min(needed, 27))
        defer { ZSTD_CCtx_setParameter(context, ZSTD_c_windowLog, 0) }
        // Long-distance matching, as `zstd --patch-from` turns on: without it the match finder's
        // search over a large prefix can miss what is there (a delta of three 16 KiB chunks took
        // 8,588 bytes at level 9 instead of 79, docs/benchmarks.md).
        ZSTD_CCtx_setParameter(context, ZSTD_c_enableLongDistanceMatching, 1)
        defer { ZSTD_CCtx_setParameter(context, ZSTD_c_enableLongDistanceMatching, 0) }
        return try compress(input)
    }

    /// ``compress(_:prefix:)`` of arrays.
    public func compress(_ input: [UInt8], prefix: [UInt8]) throws -> [UInt8] {
        try input.withUnsafeBytes { i in try prefix.withUnsafeBytes { p in try compress(i, prefix: p) } }
    }

    /// The most bytes a frame for `count` input bytes can take.
    public static func bound(forInputSize count: Int) -> Int { ZSTD_compressBound(count) }
}
