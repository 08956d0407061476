import CLZMA

/// LZMA as liblzma reads it: the `.xz` container (and the older `.lzma` "alone" one), one whole
/// stream per call, in bounded memory: the only Swift file that calls liblzma.
public enum LZMA {
    /// The most memory the decoder may use (the dictionary of preset 9 is 64 MiB).
    public static let memoryLimit: UInt64 = 256 << 20

    /// Decodes one whole `.xz` (or `.lzma`) stream into exactly `expectedSize` bytes.
    /// - Throws: ``CodecError`` for a damaged stream, one that needs more than ``memoryLimit``,
    ///   holds other than `expectedSize` bytes (never written past it), or has bytes after its end.
    public static func decompress(_ input: [UInt8], expectedSize: Int) throws -> [UInt8] {
        guard expectedSize >= 0 else { throw CodecError("LZMA: a negative size") }
        var stream = lzma_stream()
        let isXZ = input.starts(with: [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00])
        let started =
            isXZ ? lzma_stream_decoder(&stream, memoryLimit, 0) : lzma_alone_decoder(&stream, memoryLimit)
        guard started == LZMA_OK else { throw CodecError("LZMA: the decoder did not start (\(started.rawValue))") }
        defer { lzma_end(&stream) }
        // One byte more than expected: a stream that fills it holds too much.
        var output = [UInt8](repeating: 0, count: expectedSize + 1)
        let status = output.withUnsafeMutableBufferPointer { out in
            input.withUnsafeBufferPointer { inp in
                stream.next_in = inp.baseAddress
                stream.avail_in = inp.count
                stream.next_out = out.baseAddress
                stream.avail_out = out.count
                var status = LZMA_OK
                while status == LZMA_OK { status = lzma_code(&stream, LZMA_FINISH) }
                return status
            }
        }
        let produced = Int(stream.total_out)
        switch status {
        case LZMA_STREAM_END: break
        case LZMA_MEMLIMIT_ERROR:
            throw CodecError("LZMA: the stream needs more than \(memoryLimit >> 20) MiB to decode")
        case LZMA_BUF_ERROR where produced > expectedSize:
            throw CodecError("LZMA: the stream holds more than the \(expectedSize) bytes declared")
        case LZMA_BUF_ERROR: throw CodecError("LZMA: the stream is cut short")
        case LZMA_FORMAT_ERROR: throw CodecError("LZMA: not an .xz or .lzma stream")
        case LZMA_DATA_ERROR: throw CodecError("LZMA: the stream is damaged")
        case LZMA_OPTIONS_ERROR: throw CodecError("LZMA: the stream uses options this liblzma does not read")
        default: throw CodecError("LZMA: error \(status.rawValue)")
        }
        guard produced == expectedSize else {
            throw CodecError("LZMA: the stream holds \(produced) bytes, not the \(expectedSize) declared")
        }
        guard stream.avail_in == 0 else {
            throw CodecError("LZMA: \(stream.avail_in) bytes follow the end of the stream")
        }
        output.removeLast()
        return output
    }

    /// Encodes `input` as one `.xz` stream at `preset` (0…9; Apple Archive's LZMA is preset 6).
    public static func compress(_ input: [UInt8], preset: UInt32 = 6) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: lzma_stream_buffer_bound(input.count))
        var position = 0
        let status = output.withUnsafeMutableBufferPointer { out in
            input.withUnsafeBufferPointer { inp in
                lzma_easy_buffer_encode(
                    preset, LZMA_CHECK_CRC64, nil, inp.baseAddress, inp.count, out.baseAddress, &position, out.count)
            }
        }
        guard status == LZMA_OK else { throw CodecError("LZMA: compression failed (\(status.rawValue))") }
        output.removeSubrange(position...)
        return output
    }
}
