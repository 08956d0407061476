import BacklotBasics
import CZstd

/// Decompresses single zstd frames whose decompressed size is known in advance.
/// Not thread-safe: give each worker its own.
///
/// The output buffer is sized by the caller's declared size, never by the frame, so a frame that
/// expands past what was declared (a decompression bomb) fails without taking more memory.
///
/// ```swift
/// let plain = try ZstdDecompressor().decompress(frame, expectedSize: 65536)
/// ```
public final class ZstdDecompressor {
    private let context: OpaquePointer

    public init() {
        guard let ctx = ZSTD_createDCtx() else { fatalError("zstd could not allocate a decompression context") }
        context = ctx
        // Refuse frames that would need a window larger than 128 MiB, whatever they declare.
        ZSTD_DCtx_setParameter(ctx, ZSTD_d_windowLogMax, 27)
    }

    deinit { ZSTD_freeDCtx(context) }

    /// Decompresses exactly one frame that must expand to exactly `expectedSize` bytes, with the
    /// dictionary it was compressed against (nil for none; a frame compressed without one decodes
    /// the same with one).
    /// - Throws: ``BacklotError/Code/corruptArchive`` when the input is not one valid frame of that size.
    public func decompress(
        _ input: UnsafeRawBufferPointer, expectedSize: Int, dictionary: ZstdDictionary?
    ) throws -> [UInt8] {
        // Not zeroed first: the array holds exactly the bytes zstd wrote, all `expectedSize` of them.
        return try [UInt8](unsafeUninitializedCapacity: expectedSize) { output, count in
            count = 0
            let produced = try self.decompress(
                input, into: UnsafeMutableRawBufferPointer(output), dictionary: dictionary)
            guard produced == expectedSize else {
                throw BacklotError(
                    .corruptArchive, "the zstd frame expands to \(produced) bytes, not the \(expectedSize) declared")
            }
            count = produced
        }
    }

    /// Decompresses exactly one frame into `output`, which must be large enough, with the
    /// dictionary it was compressed against (nil for none); returns the size produced.
    /// - Throws: ``BacklotError/Code/corruptArchive`` when the input is not one valid frame that
    ///   fits, or names another dictionary.
    public func decompress(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer, dictionary: ZstdDictionary?
    ) throws -> Int {
        let frameSize = ZSTD_findFrameCompressedSize(input.baseAddress, input.count)
        if ZSTD_isError(frameSize) != 0 || frameSize != input.count {
            throw BacklotError(.corruptArchive, "the bytes are not exactly one zstd frame")
        }
        let declared = ZSTD_getFrameContentSize(input.baseAddress, input.count)
        // ZSTD_CONTENTSIZE_UNKNOWN and _ERROR are the two largest UInt64 values.
        if declared < UInt64.max - 1, declared > UInt64(output.count) {
            throw BacklotError(
                .corruptArchive, "the zstd frame declares \(declared) bytes, more than the \(output.count) allowed")
        }
        let named = ZSTD_getDictID_fromFrame(input.baseAddress, input.count)
        if named != 0, named != dictionary?.id {
            throw BacklotError(
                .corruptArchive,
                "the zstd frame needs dictionary \(named), but \(dictionary.map { "the pack's is \($0.id)" } ?? "the pack has none")"
            )
        }
        let produced =
            if let dictionary {
                ZSTD_decompress_usingDDict(
                    context, output.baseAddress, output.count, input.baseAddress, input.count,
                    dictionary.decodingTables)
            } else {
                ZSTD_decompressDCtx(context, output.baseAddress, output.count, input.baseAddress, input.count)
            }
        if ZSTD_isError(produced) != 0 {
            throw BacklotError(
                .corruptArchive, "zstd could not decompress the frame: \(String(cString: ZSTD_getErrorName(produced)))")
        }
        return produced
    }

    /// Decompresses exactly one frame that must expand to exactly `expectedSize` bytes.
    public func decompress(_ input: [UInt8], expectedSize: Int, dictionary: ZstdDictionary?) throws -> [UInt8] {
        try input.withUnsafeBytes { try decompress($0, expectedSize: expectedSize, dictionary: dictionary) }
    }

    /// Decompresses exactly one frame made by ``ZstdCompressor/compress(_:prefix:)`` against the
    /// same `prefix` (zstd's `ZSTD_DCtx_refPrefix`), into a buffer of exactly `expectedSize` bytes:
    /// as for ``decompress(_:expectedSize:)``, a frame that declares or produces more is refused
    /// without taking more memory. A wrong prefix is not detected here (the frame holds no
    /// checksum): it gives other bytes or an error, and callers check the result's SHA-256.
    ///
    /// ```swift
    /// let chunk = try ZstdDecompressor().decompress(delta, prefix: oldChunk, expectedSize: 70_000)
    /// ```
    /// - Throws: ``BacklotError/Code/corruptArchive`` when the input is not one valid frame of that size.
    public func decompress(
        _ input: UnsafeRawBufferPointer, prefix: UnsafeRawBufferPointer, expectedSize: Int
    ) throws -> [UInt8] {
        let status = ZSTD_DCtx_refPrefix(context, prefix.baseAddress, prefix.count)
        if ZSTD_isError(status) != 0 {
            throw BacklotError(
                .library, "zstd refused the reference prefix: \(String(cString: ZSTD_getErrorName(status)))")
        }
        // A frame refused before it is decompressed leaves the prefix referenced: drop it, so the
        // next frame of this context is decoded without it.
        defer { ZSTD_DCtx_reset(context, ZSTD_reset_session_only) }
        return try decompress(input, expectedSize: expectedSize, dictionary: nil)
    }

    /// ``decompress(_:prefix:expectedSize:)`` of arrays.
    public func decompress(_ input: [UInt8], prefix: [UInt8], expectedSize: Int) throws -> [UInt8] {
        try input.withUnsafeBytes { i in
            try prefix.withUnsafeBytes { p in try decompress(i, prefix: p, expectedSize: expectedSize) }
        }
    }

    /// The libzstd version, such as `1.5.4`.
    public static var libraryVersion: String { String(cString: ZSTD_versionString()) }
}
