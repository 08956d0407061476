import CLZ4

/// LZ4 as Apple's Compression library frames it (`compression.h`): blocks `bv41` (a u32 raw size,
/// a u32 encoded size, an LZ4 block that may refer to the 64 KiB before it), `bv4-` (a u32 size,
/// the bytes as they are), ended by `bv4$`. The only Swift file that calls liblz4.
public enum LZ4Frames {
    /// Decodes one whole stream into exactly `expectedSize` bytes.
    /// - Throws: ``CodecError`` naming the block's offset: an unknown block, a truncated one, one
    ///   that decodes to other than its declared size or past `expectedSize`, no end marker, or
    ///   bytes after it.
    public static func decompress(_ input: [UInt8], expectedSize: Int) throws -> [UInt8] {
        guard expectedSize >= 0 else { throw CodecError("LZ4: a negative size") }
        var output = [UInt8](repeating: 0, count: expectedSize)
        var produced = 0
        var at = 0
        func u32(_ offset: Int) throws -> Int {
            guard offset + 4 <= input.count else { throw CodecError("LZ4: the block at offset \(at) is cut short") }
            return Int(input[offset]) | Int(input[offset + 1]) << 8 | Int(input[offset + 2]) << 16
                | Int(input[offset + 3]) << 24
        }
        while true {
            guard at + 4 <= input.count else { throw CodecError("LZ4: the stream ends without its end marker (bv4$)") }
            let magic = Array(input[at..<at + 4])
            if magic == Array("bv4$".utf8) {
                guard at + 4 == input.count else {
                    throw CodecError("LZ4: \(input.count - at - 4) bytes follow the end marker")
                }
                break
            }
            if magic == Array("bv4-".utf8) {
                let size = try u32(at + 4)
                let start = at + 8
                guard size <= input.count - start else {
                    throw CodecError("LZ4: the raw block at offset \(at) is cut short")
                }
                guard size <= expectedSize - produced else {
                    throw CodecError("LZ4: the block at offset \(at) goes past the \(expectedSize) bytes declared")
                }
                output.replaceSubrange(produced..<produced + size, with: input[start..<start + size])
                produced += size
                at = start + size
                continue
            }
            guard magic == Array("bv41".utf8) else {
                throw CodecError("LZ4: no block at offset \(at) (bv41, bv4- or bv4$ expected)")
            }
            let raw = try u32(at + 4)
            let encoded = try u32(at + 8)
            let start = at + 12
            guard encoded <= input.count - start else {
                throw CodecError("LZ4: the block at offset \(at) is cut short")
            }
            guard raw <= expectedSize - produced else {
                throw CodecError("LZ4: the block at offset \(at) goes past the \(expectedSize) bytes declared")
            }
            guard raw <= Int(Int32.max), encoded <= Int(Int32.max) else {
                throw CodecError("LZ4: the block at offset \(at) declares more than 2 GiB")
            }
            let history = min(produced, 64 << 10)
            let got = output.withUnsafeMutableBufferPointer { out in
                input.withUnsafeBufferPointer { inp in
                    let destination = out.baseAddress! + produced
                    let source = UnsafeRawPointer(inp.baseAddress! + start).assumingMemoryBound(to: CChar.self)
                    return LZ4_decompress_safe_usingDict(
                        source, UnsafeMutableRawPointer(destination).assumingMemoryBound(to: CChar.self),
                        Int32(encoded), Int32(raw),
                        UnsafeRawPointer(destination - history).assumingMemoryBound(to: CChar.self), Int32(history))
                }
            }
            guard got == raw else {
                throw CodecError("LZ4: the block at offset \(at) is damaged or holds other than its \(raw) bytes")
            }
            produced += raw
            at = start + encoded
        }
        guard produced == expectedSize else {
            throw CodecError("LZ4: the stream holds \(produced) bytes, not the \(expectedSize) declared")
        }
        return output
    }

    /// Encodes `input` in blocks of at most 64 KiB, each independent (`bv41`, or `bv4-` where LZ4
    /// does not make it smaller), then `bv4$`.
    public static func compress(_ input: [UInt8]) throws -> [UInt8] {
        var output: [UInt8] = []
        var at = 0
        func append32(_ value: Int) { withUnsafeBytes(of: UInt32(value).littleEndian) { output += $0 } }
        while at < input.count {
            let size = min(64 << 10, input.count - at)
            var block = [UInt8](repeating: 0, count: Int(LZ4_compressBound(Int32(size))))
            let encoded = block.withUnsafeMutableBufferPointer { out in
                input.withUnsafeBufferPointer { inp in
                    LZ4_compress_default(
                        UnsafeRawPointer(inp.baseAddress! + at).assumingMemoryBound(to: CChar.self),
                        UnsafeMutableRawPointer(out.baseAddress!).assumingMemoryBound(to: CChar.self), Int32(size),
                        Int32(out.count))
                }
            }
            if encoded > 0 && Int(encoded) < size {
                output += Array("bv41".utf8)
                append32(size)
                append32(Int(encoded))
                output += block[..<Int(encoded)]
            } else {
                output += Array("bv4-".utf8)
                append32(size)
                output += input[at..<at + size]
            }
            at += size
        }
        output += Array("bv4$".utf8)
        return output
    }
}
