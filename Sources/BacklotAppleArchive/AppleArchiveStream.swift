import BacklotBasics
import BacklotCodecs

/// The plain stream of entries inside an Apple Archive, read front to back in bounded memory:
/// the file itself for a plain archive (`AA01`/`YAA1`), else its `pbz?` blocks decompressed one
/// at a time (docs/format.md §13). Every block's sizes are checked against the file before any is
/// decompressed, and a block must decode to exactly the size it declares.
final class AppleArchiveStream {
    /// How a block of a compressed archive is laid out in the file.
    struct Block {
        let offset: UInt64
        let rawSize: Int
        let compressedSize: Int
    }

    let source: any AppleArchiveSource
    let name: String
    /// The compression (`e`, `z`, `x`, `4`, `b`), nil for a plain archive.
    let algorithm: UInt8?
    let blockSize: UInt64
    /// The compressed blocks, in order (empty for a plain archive).
    let blocks: [Block]
    /// The plain stream's length: the file's for a plain archive, the blocks' raw sizes summed.
    let plainSize: UInt64

    /// Where the next read starts in the plain stream.
    private(set) var position: UInt64 = 0
    private var current: (index: Int, start: UInt64, bytes: [UInt8])?
    /// Blocks decompressed so far (reported by `verify`).
    private(set) var decodedBlocks = 0

    /// The largest block a reader accepts (Apple's default is 4 MiB).
    static let maximumBlockSize: UInt64 = 64 << 20

    init(_ source: any AppleArchiveSource, name: String) throws {
        self.source = source
        self.name = name
        let head = try source.read(count: Int(min(12, source.size)), at: 0)
        func bad(_ message: String, at offset: UInt64) -> BacklotError {
            BacklotError(
                .corruptArchive, "not a sound Apple Archive: \(message)", context: "\(name) at offset \(offset)",
                hint: "make the .aar again with ba-package (or backlot package --format aar)")
        }
        guard head.count >= 4 else { throw bad("the file has \(head.count) bytes", at: 0) }
        if head.starts(with: Array("AA01".utf8)) || head.starts(with: Array("YAA1".utf8)) {
            algorithm = nil
            blockSize = 0
            blocks = []
            plainSize = source.size
            return
        }
        guard head.starts(with: Array("pbz".utf8)) else { throw bad("it starts with neither AA01 nor pbz", at: 0) }
        guard "ezx4b".utf8.contains(head[3]) else {
            throw bad("'\(String(decoding: [head[3]], as: UTF8.self))' is not a known compression", at: 3)
        }
        guard head.count == 12 else { throw bad("the stream header is cut short", at: 0) }
        algorithm = head[3]
        blockSize = Self.bigEndian(head[4..<12])
        guard blockSize >= 1, blockSize <= Self.maximumBlockSize else {
            throw bad("the block size \(blockSize) is outside 1 byte … 64 MiB", at: 4)
        }
        // Every block's header first: the stream's plain size is known, and a size that leaves the
        // file is refused, before anything is decompressed.
        var found: [Block] = []
        var at: UInt64 = 12
        var total: UInt64 = 0
        while at < source.size {
            guard source.size - at >= 16 else { throw bad("the block header is cut short", at: at) }
            let sizes = try source.read(count: 16, at: at)
            guard sizes.count == 16 else { throw bad("the block header is cut short", at: at) }
            let raw = Self.bigEndian(sizes[0..<8])
            let compressed = Self.bigEndian(sizes[8..<16])
            guard raw >= 1, raw <= blockSize else {
                throw bad("a block declares \(raw) bytes, outside 1 … the block size \(blockSize)", at: at)
            }
            // No codec makes a block much larger than its raw bytes: a payload far larger is refused
            // before it is read into memory.
            guard compressed <= raw + raw / 8 + (64 << 10) else {
                throw bad("a block declares \(compressed) compressed bytes for \(raw) raw ones", at: at + 8)
            }
            guard compressed >= 1, compressed <= source.size - at - 16 else {
                throw bad("a block declares \(compressed) compressed bytes, more than the file holds", at: at + 8)
            }
            found.append(Block(offset: at + 16, rawSize: Int(raw), compressedSize: Int(compressed)))
            total += raw
            at += 16 + compressed
        }
        blocks = found
        plainSize = total
    }

    static func bigEndian(_ bytes: ArraySlice<UInt8>) -> UInt64 { bytes.reduce(0) { $0 << 8 | UInt64($1) } }

    /// The compression's name, for people.
    var compressionName: String {
        switch algorithm {
        case nil: "none"
        case UInt8(ascii: "e"): "lzfse"
        case UInt8(ascii: "z"): "zlib"
        case UInt8(ascii: "x"): "lzma"
        case UInt8(ascii: "4"): "lz4"
        default: "lzbitmap"
        }
    }

    /// Bytes left in the plain stream.
    var remaining: UInt64 { plainSize - position }

    /// The next `count` bytes of the plain stream.
    /// - Throws: ``BacklotError/Code/corruptArchive`` when fewer are left, or a block is damaged.
    func read(_ count: Int, what: String) throws -> [UInt8] {
        guard UInt64(count) <= remaining else {
            throw BacklotError(
                .corruptArchive,
                "not a sound Apple Archive: \(what) needs \(count) bytes, but the archive ends \(remaining) bytes later",
                context: "\(name) at plain offset \(position)", hint: "the archive is truncated or damaged")
        }
        var out: [UInt8] = []
        out.reserveCapacity(count)
        try forEach(UInt64(count)) { out += $0 }
        return out
    }

    /// Hands the next `count` bytes of the plain stream to `body`, a piece at a time (at most a
    /// block), without holding them all.
    func forEach(_ count: UInt64, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard count <= remaining else {
            throw BacklotError(
                .corruptArchive,
                "not a sound Apple Archive: an entry's data runs \(count - remaining) bytes past the archive's end",
                context: "\(name) at plain offset \(position)", hint: "the archive is truncated or damaged")
        }
        var left = count
        while left > 0 {
            if algorithm == nil {
                let piece = Int(min(left, 1 << 20))
                let bytes = try source.read(count: piece, at: position)
                guard bytes.count == piece else {
                    throw BacklotError(.io, "the archive shrank while it was read", context: name)
                }
                try bytes.withUnsafeBytes(body)
                position += UInt64(piece)
                left -= UInt64(piece)
                continue
            }
            let block = try blockHolding(position)
            let offset = Int(position - block.start)
            let piece = Int(min(left, UInt64(block.bytes.count - offset)))
            try block.bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[offset..<offset + piece])) }
            position += UInt64(piece)
            left -= UInt64(piece)
        }
    }

    /// The decompressed block that holds plain offset `at` (blocks are read in order).
    private func blockHolding(_ at: UInt64) throws -> (index: Int, start: UInt64, bytes: [UInt8]) {
        if let current, at < current.start + UInt64(current.bytes.count) { return current }
        let index = current.map { $0.index + 1 } ?? 0
        let start = current.map { $0.start + UInt64($0.bytes.count) } ?? 0
        current = nil  // its memory is let go before the next block's is taken
        let block = blocks[index]
        let payload = try source.read(count: block.compressedSize, at: block.offset)
        guard payload.count == block.compressedSize else {
            throw BacklotError(.io, "the archive shrank while it was read", context: name)
        }
        let bytes: [UInt8]
        do {
            bytes = try Self.decode(payload, rawSize: block.rawSize, algorithm: algorithm!)
        } catch let e as CodecError {
            throw BacklotError(
                .corruptArchive,
                "not a sound Apple Archive: block \(index + 1) of \(blocks.count) does not decode: \(e.message)",
                context: "\(name) at offset \(block.offset)", hint: "the archive is damaged: make it again")
        }
        decodedBlocks += 1
        current = (index, start, bytes)
        return current!
    }

    /// One block's bytes. A block whose compressed size equals its raw size is stored as it is
    /// (as pbzx streams do).
    static func decode(_ payload: [UInt8], rawSize: Int, algorithm: UInt8) throws -> [UInt8] {
        if payload.count == rawSize { return payload }
        switch algorithm {
        case UInt8(ascii: "z"): return try Zlib.decompress(payload, expectedSize: rawSize)
        case UInt8(ascii: "x"): return try LZMA.decompress(payload, expectedSize: rawSize)
        case UInt8(ascii: "4"): return try LZ4Frames.decompress(payload, expectedSize: rawSize)
        case UInt8(ascii: "e"):
            do {
                return try LZFSE.decode(payload, expectedSize: rawSize)
            } catch let e as LZFSE.DecodingError {
                throw CodecError("LZFSE: \(e.message) (at \(e.offset) in the block)")
            }
        default:
            throw CodecError(
                "LZBITMAP (pbzb) has no public description to decode it from; make the archive with LZFSE, zlib, LZMA or LZ4"
            )
        }
    }
}
