import BacklotBasics
import CZstd

/// Compresses buffers into single zstd frames. Not thread-safe: give each worker its own.
///
/// Output is deterministic for a given input, level and libzstd version: no threads, no checksum
/// (Backlot checks content with SHA-256), content size recorded in the frame header.
///
/// ```swift
/// let compressor = ZstdCompressor(level: 3)
/// let frame = try compressor.compress(bytes)
/// ```
public final class ZstdCompressor {
    private let context: OpaquePointer
    /// The compression level (1…19; 3 is zstd's default).
    public let level: Int32

    public init(level: Int32 = 3) {
        guard let ctx = ZSTD_createCCtx() else { fatalError("zstd could not allocate a compression context") }
        context = ctx
        self.level = level
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
        var output = [UInt8](repeating: 0, count: bound)
        let written = output.withUnsafeMutableBytes { out in
            ZSTD_compress2(context, out.baseAddress, bound, input.baseAddress, input.count)
        }
        if ZSTD_isError(written) != 0 {
            throw BacklotError(.library, "zstd compression failed: \(String(cString: ZSTD_getErrorName(written)))")
        }
        output.removeSubrange(written...)
        return output
    }

    /// Compresses `input` into one frame.
    public func compress(_ input: [UInt8]) throws -> [UInt8] {
        try input.withUnsafeBytes { try compress($0) }
    }

    /// The most bytes a frame for `count` input bytes can take.
    public static func bound(forInputSize count: Int) -> Int { ZSTD_compressBound(count) }
}
