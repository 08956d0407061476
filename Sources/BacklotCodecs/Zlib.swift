import CZlib

/// zlib (RFC 1950: a 2-byte header, DEFLATE, an Adler-32), one whole stream per call, in bounded
/// memory: the only Swift file that calls zlib.
///
/// ```swift
/// let block = try Zlib.compress(bytes, level: 5)
/// let back = try Zlib.decompress(block, expectedSize: bytes.count)
/// ```
public enum Zlib {
    /// Decodes one whole zlib stream into exactly `expectedSize` bytes.
    /// - Throws: ``CodecError`` for a damaged stream, one that holds more or fewer bytes than
    ///   expected (never written past `expectedSize`), or bytes after its end.
    public static func decompress(_ input: [UInt8], expectedSize: Int) throws -> [UInt8] {
        guard expectedSize >= 0 else { throw CodecError("zlib: a negative size") }
        var output = [UInt8](repeating: 0, count: expectedSize)
        var written = uLongf(expectedSize)
        var consumed = uLong(input.count)
        let status = output.withUnsafeMutableBufferPointer { out in
            input.withUnsafeBufferPointer { inp in
                // A one-byte buffer stands in for an empty output, which zlib's pointer must not be.
                var spare: UInt8 = 0
                return withUnsafeMutablePointer(to: &spare) { sparePointer in
                    uncompress2(
                        out.baseAddress ?? sparePointer, &written, inp.baseAddress ?? UnsafePointer(sparePointer),
                        &consumed)
                }
            }
        }
        switch status {
        case Z_OK: break
        case Z_BUF_ERROR:
            throw CodecError(
                written == uLongf(expectedSize)
                    ? "zlib: the stream holds more than the \(expectedSize) bytes declared, or it is cut short"
                    : "zlib: the stream is cut short")
        case Z_DATA_ERROR: throw CodecError("zlib: the stream is damaged (bad header, data or Adler-32)")
        case Z_MEM_ERROR: throw CodecError("zlib: out of memory")
        default: throw CodecError("zlib: error \(status)")
        }
        guard written == uLongf(expectedSize) else {
            throw CodecError("zlib: the stream holds \(written) bytes, not the \(expectedSize) declared")
        }
        guard consumed == uLong(input.count) else {
            throw CodecError("zlib: \(uLong(input.count) - consumed) bytes follow the end of the stream")
        }
        return output
    }

    /// Encodes `input` as one zlib stream at `level` (0…9; Apple Archive's zlib is level 5).
    public static func compress(_ input: [UInt8], level: Int32 = 5) throws -> [UInt8] {
        var bound = compressBound(uLong(input.count))
        var output = [UInt8](repeating: 0, count: Int(bound))
        let status = output.withUnsafeMutableBufferPointer { out in
            input.withUnsafeBufferPointer { inp in
                var spare: UInt8 = 0
                return withUnsafeMutablePointer(to: &spare) { sparePointer in
                    compress2(
                        out.baseAddress!, &bound, inp.baseAddress ?? UnsafePointer(sparePointer), uLong(input.count),
                        level)
                }
            }
        }
        guard status == Z_OK else { throw CodecError("zlib: compression failed (\(status))") }
        output.removeSubrange(Int(bound)...)
        return output
    }

    /// The CRC-32 (ISO-HDLC, as zip and Apple Archive's `CKS` use) of `bytes`, continuing `crc`.
    public static func crc32(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        var value = uLong(crc)
        var rest = bytes
        // zlib takes a 32-bit length: feed large buffers in pieces.
        while !rest.isEmpty {
            let piece = UnsafeRawBufferPointer(rebasing: rest.prefix(1 << 30))
            value = CZlib.crc32(value, piece.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(piece.count))
            rest = UnsafeRawBufferPointer(rebasing: rest.dropFirst(piece.count))
        }
        return UInt32(truncatingIfNeeded: value)
    }
}
