// A pure-Swift LZFSE decoder, written from the format as Apple's BSD-licensed reference
// implementation (github.com/lzfse/lzfse) defines it. No C library is involved.
//
// A stream is a sequence of blocks, each starting with a four-byte magic:
//   `bvx-`  raw bytes;
//   `bvx1`  LZFSE block with plain frequency tables;
//   `bvx2`  LZFSE block with packed header fields and bit-packed frequency tables;
//   `bvxn`  LZVN block (byte-oriented LZ, used by the encoder for small inputs);
//   `bvx$`  end of stream.
// Matches may reach back into earlier blocks, so all blocks write into one output buffer.

/// Decodes LZFSE streams (Apple's `COMPRESSION_LZFSE`: blocks `bvx-` raw, `bvx1` and `bvx2` LZFSE,
/// `bvxn` LZVN, ended by `bvx$`) into a buffer whose size the caller knows in advance.
///
/// The decoder is written for hostile input: every length, distance and table read from the stream
/// is checked before use, and the output is allocated once at `expectedSize`, so a stream that
/// claims to expand further fails without taking more memory.
///
/// ```swift
/// let plain = try LZFSE.decode(compressed, expectedSize: 65536)
/// ```
public enum LZFSE {
    /// Decodes `input`, one whole stream, into exactly `expectedSize` bytes.
    ///
    /// - Parameters:
    ///   - input: one complete LZFSE stream, ending with its `bvx$` block and nothing after it.
    ///   - expectedSize: the decoded size, known from elsewhere (0…1 GiB).
    /// - Returns: the decoded bytes; always `expectedSize` of them.
    /// - Throws: `LZFSE.DecodingError` naming what is wrong and the input offset where: a bad
    ///   block magic, a truncated block, invalid FSE tables or frequencies, a match that refers
    ///   before the start of the output, output that would exceed `expectedSize` (refused before
    ///   it is written: memory stays bounded by expectedSize), a stream that ends before `bvx$`,
    ///   or bytes after it, or a total that is not `expectedSize`.
    public static func decode(_ input: [UInt8], expectedSize: Int) throws -> [UInt8] {
        guard expectedSize >= 0, expectedSize <= Limits.maxOutputSize else {
            throw DecodingError(
                message: "expectedSize \(expectedSize) is outside 0...\(Limits.maxOutputSize)", offset: 0)
        }
        return try input.withUnsafeBufferPointer { source in
            guard let src = source.baseAddress, source.count >= 4 else {
                throw DecodingError(message: "stream ends before its end-of-stream block (bvx$)", offset: source.count)
            }
            // One byte of capacity at least, so the buffer always has an address; never written past expectedSize.
            return try [UInt8](unsafeUninitializedCapacity: Swift.max(expectedSize, 1)) { buffer, initializedCount in
                guard let dst = buffer.baseAddress else {
                    throw DecodingError(message: "could not allocate the output buffer", offset: 0)
                }
                var decoder = StreamDecoder(src: src, srcCount: source.count, dst: dst, limit: expectedSize)
                defer { initializedCount = decoder.outPos }
                try decoder.run()
            }
        }
    }

    /// Why a stream could not be decoded, and where.
    public struct DecodingError: Error, Sendable, Hashable, CustomStringConvertible {
        /// What is wrong with the stream.
        public let message: String
        /// The offset in the input where the problem was found (a block's start for block-wide problems).
        public let offset: Int

        /// A one-line summary, e.g. `LZFSE: bad block magic 0x00000000 (at input offset 12)`.
        public var description: String { "LZFSE: \(message) (at input offset \(offset))" }
    }
}

// MARK: - Format constants

extension LZFSE {
    private enum Limits {
        /// The largest output we agree to allocate.
        static let maxOutputSize = 1 << 30
        /// Per-block maxima (the reference's LZFSE_MATCHES_PER_BLOCK and LZFSE_LITERALS_PER_BLOCK).
        static let matchesPerBlock = 10_000
        static let literalsPerBlock = 4 * matchesPerBlock
    }

    private enum Magic {
        static let endOfStream: UInt32 = 0x2478_7662  // "bvx$"
        static let raw: UInt32 = 0x2d78_7662  // "bvx-"
        static let lzfseV1: UInt32 = 0x3178_7662  // "bvx1"
        static let lzfseV2: UInt32 = 0x3278_7662  // "bvx2"
        static let lzvn: UInt32 = 0x6e78_7662  // "bvxn"
    }

    /// The four FSE alphabets of an LZFSE block (20 L, 20 M, 64 D and 256 literal symbols).
    private enum Alphabet {
        /// State counts: powers of two, fixed by the format.
        static let lStates = 64
        static let mStates = 64
        static let dStates = 256
        static let literalStates = 1024
        /// Where each alphabet's frequencies start in the 360-entry table of a block header.
        static let lFreqs = 0
        static let mFreqs = 20
        static let dFreqs = 40
        static let literalFreqs = 104
        static let totalFreqs = 360

        // L (literal run), M (match length) and D (distance) are sent as an FSE-coded symbol
        // naming a base value plus that many raw extra bits.
        static let lExtraBits: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 3, 5, 8]
        static let lBase: [Int32] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20, 28, 60]
        static let mExtraBits: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 5, 8, 11]
        static let mBase: [Int32] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 24, 56, 312]
        /// Distances: symbols come in fours with 0, 0, 0, 0, 1, 1, 1, 1, … 15 extra bits, and each
        /// base follows on from the previous symbol's range.
        static let dExtraBits: [UInt8] = (0..<64).map { UInt8($0 / 4) }
        static let dBase: [Int32] = {
            var bases = [Int32](repeating: 0, count: 64)
            for symbol in 1..<64 { bases[symbol] = bases[symbol - 1] + (1 << Int32(dExtraBits[symbol - 1])) }
            return bases
        }()
    }
}

// MARK: - FSE tables

extension LZFSE {
    /// One state of an L, M or D decoding table: read `totalBits`, the high ones go to the next
    /// state (added to `delta`), the low `valueBits` to the value (added to `base`).
    private struct ValueEntry {
        var totalBits: UInt8 = 0
        var valueBits: UInt8 = 0
        var delta: UInt16 = 0
        var base: Int32 = 0
    }

    /// Spreads each symbol's frequency over consecutive states, as the encoder does, calling
    /// `emit(state, symbol, stateBits, delta)`. Frequencies must already be checked to sum to at
    /// most `nStates` (a power of two); states past the sum are left to the caller.
    ///
    /// A symbol of frequency f owns f states; reading k or k-1 bits from each and adding its delta
    /// lands in 0..<nStates, so state indices stay in bounds by construction.
    @inline(__always)
    private static func spreadStates(
        _ freqs: UnsafeBufferPointer<UInt16>, nStates: Int,
        _ emit: (_ state: Int, _ symbol: Int, _ bits: Int, _ delta: Int) -> Void
    ) {
        let stateBitLength = Int.bitWidth - nStates.leadingZeroBitCount
        var state = 0
        for symbol in 0..<freqs.count {
            let f = Int(freqs[symbol])
            if f == 0 { continue }
            // k makes nStates <= f << k < 2 * nStates; 0 <= k <= log2(nStates) since 1 <= f <= nStates.
            let k = stateBitLength - (Int.bitWidth - f.leadingZeroBitCount)
            let j0 = ((2 &* nStates) &>> k) &- f
            for j in 0..<f where state < nStates {
                if j < j0 {
                    emit(state, symbol, k, ((f &+ j) &<< k) &- nStates)
                } else {
                    // j >= j0 only happens when k >= 1.
                    let k1 = Swift.max(k - 1, 0)
                    emit(state, symbol, k1, (j &- j0) &<< k1)
                }
                state += 1
            }
        }
    }

    /// Checks frequencies the way the reference does: their sum must not exceed the state count.
    private static func checkFrequencies(
        _ freqs: UnsafeBufferPointer<UInt16>, nStates: Int, name: String, offset: Int
    ) throws {
        var sum = 0
        for f in freqs { sum += Int(f) }
        guard sum <= nStates else {
            throw DecodingError(
                message: "\(name) frequencies sum to \(sum), more than the \(nStates) states", offset: offset)
        }
    }

    /// Builds an L, M or D table; states no symbol owns decode as value 0 and go to state 0.
    private static func buildValueTable(
        _ freqs: UnsafeBufferPointer<UInt16>, nStates: Int, extraBits: [UInt8], bases: [Int32],
        into table: UnsafeMutableBufferPointer<ValueEntry>
    ) {
        for i in 0..<nStates { table[i] = ValueEntry() }
        spreadStates(freqs, nStates: nStates) { state, symbol, bits, delta in
            let vbits = extraBits[symbol]
            table[state] = ValueEntry(
                totalBits: UInt8(truncatingIfNeeded: bits) &+ vbits, valueBits: vbits,
                delta: UInt16(truncatingIfNeeded: delta), base: bases[symbol])
        }
    }

    /// Builds the literal table, packed as `delta << 16 | symbol << 8 | bits` per state.
    private static func buildLiteralTable(
        _ freqs: UnsafeBufferPointer<UInt16>, into table: UnsafeMutableBufferPointer<UInt32>
    ) {
        for i in 0..<table.count { table[i] = 0 }
        spreadStates(freqs, nStates: Alphabet.literalStates) { state, symbol, bits, delta in
            table[state] =
                UInt32(truncatingIfNeeded: delta) << 16 | UInt32(truncatingIfNeeded: symbol) << 8
                | UInt32(truncatingIfNeeded: bits)
        }
    }
}

// MARK: - Bit reader

extension LZFSE {
    /// Reads an FSE bit stream from its end towards its start (the encoder wrote it forwards).
    /// Keeps 56…63 bits after each refill, and never reads below `lowerBound` or at/after the
    /// stream's end.
    private struct BackwardBitReader {
        let base: UnsafePointer<UInt8>
        let baseCount: Int
        let lowerBound: Int
        /// Bytes before `position` (and at or after `lowerBound`) are still unread.
        private(set) var position: Int
        private var accum: UInt64 = 0
        private var count = 0

        /// Starts a stream ending at `end`. `finalBits` (-8…0) is the encoder's closing bit count:
        /// 0 means the last 7 bytes are all data, -n that the last 8 bytes end in n zero padding bits.
        init(
            base: UnsafePointer<UInt8>, baseCount: Int, lowerBound: Int, end: Int, finalBits: Int, what: String
        ) throws {
            self.base = base
            self.baseCount = baseCount
            self.lowerBound = lowerBound
            guard (-8...0).contains(finalBits) else {
                throw DecodingError(message: "\(what) stream has an invalid final bit count \(finalBits)", offset: end)
            }
            let initialBytes = finalBits == 0 ? 7 : 8
            guard end - lowerBound >= initialBytes, end <= baseCount else {
                throw DecodingError(message: "\(what) stream is too short to start", offset: end)
            }
            position = end - initialBytes
            var value: UInt64 = 0
            for i in 0..<initialBytes {
                value |= UInt64(base[position + i]) << UInt64(8 * i)
            }
            accum = value
            count = finalBits + (finalBits == 0 ? 56 : 64)
            // The padding bits above `count` must be zero.
            guard accum &>> UInt64(count) == 0 else {
                throw DecodingError(message: "\(what) stream has nonzero padding bits", offset: end - 1)
            }
        }

        /// Tops the accumulator up to 56…63 bits; false if the stream has run out.
        @inline(__always)
        mutating func refill() -> Bool {
            let bytes = (63 &- count) &>> 3
            let newPosition = position &- bytes
            guard newPosition >= lowerBound else { return false }
            let bits = UInt64(truncatingIfNeeded: bytes &* 8)
            var incoming: UInt64
            if newPosition &+ 8 <= baseCount {
                incoming = UInt64(littleEndian: UnsafeRawPointer(base + newPosition).loadUnaligned(as: UInt64.self))
                incoming &= (1 &<< bits) &- 1
            } else {
                incoming = 0
                for i in 0..<bytes { incoming |= UInt64(base[newPosition + i]) &<< UInt64(8 * i) }
            }
            accum = (accum &<< bits) | incoming
            count &+= bytes &* 8
            position = newPosition
            return true
        }

        /// Takes the next `n` bits (the highest still held). Callers never ask for more than a
        /// refill provides; the clamp only keeps a broken invariant from corrupting state.
        @inline(__always)
        mutating func pull(_ n: Int) -> UInt64 {
            let n = Swift.min(n, count)
            count &-= n
            let shift = UInt64(truncatingIfNeeded: count)
            let result = accum &>> shift
            accum &= (1 &<< shift) &- 1
            return result
        }
    }
}

// MARK: - Block decoding

extension LZFSE {
    /// The fields of an LZFSE block header, after decoding either header version.
    private struct FSEBlockHeader {
        var rawBytes = 0
        var literalCount = 0
        var matchCount = 0
        var literalPayloadBytes = 0
        var lmdPayloadBytes = 0
        var literalBits = 0
        var literalStates = (0, 0, 0, 0)
        var lmdBits = 0
        var lState = 0
        var mState = 0
        var dState = 0
        var headerSize = 0
        /// L, M, D and literal frequencies, in that order.
        var freqs = [UInt16](repeating: 0, count: Alphabet.totalFreqs)
    }

    private struct StreamDecoder {
        let src: UnsafePointer<UInt8>
        let srcCount: Int
        let dst: UnsafeMutablePointer<UInt8>
        /// The caller's expectedSize: nothing is written at or past it.
        let limit: Int
        var inPos = 0
        var outPos = 0

        // Scratch reused by every LZFSE block.
        var literalTable = [UInt32](repeating: 0, count: Alphabet.literalStates)
        var lTable = [ValueEntry](repeating: ValueEntry(), count: Alphabet.lStates)
        var mTable = [ValueEntry](repeating: ValueEntry(), count: Alphabet.mStates)
        var dTable = [ValueEntry](repeating: ValueEntry(), count: Alphabet.dStates)
        /// Decoded literals of the current block; grows to the largest declared count, at most 40,000.
        var literals: [UInt8] = []

        init(src: UnsafePointer<UInt8>, srcCount: Int, dst: UnsafeMutablePointer<UInt8>, limit: Int) {
            self.src = src
            self.srcCount = srcCount
            self.dst = dst
            self.limit = limit
        }

        mutating func run() throws {
            while true {
                guard srcCount - inPos >= 4 else {
                    throw DecodingError(message: "stream ends before its end-of-stream block (bvx$)", offset: inPos)
                }
                let magic = load32(inPos)
                switch magic {
                case Magic.endOfStream:
                    let blockStart = inPos
                    inPos += 4
                    guard inPos == srcCount else {
                        throw DecodingError(
                            message: "\(srcCount - inPos) unexpected bytes after the end-of-stream block", offset: inPos
                        )
                    }
                    guard outPos == limit else {
                        throw DecodingError(
                            message: "stream decodes to \(outPos) bytes, expected \(limit)", offset: blockStart)
                    }
                    return
                case Magic.raw:
                    try decodeRawBlock()
                case Magic.lzvn:
                    try decodeLZVNBlock()
                case Magic.lzfseV1, Magic.lzfseV2:
                    try decodeLZFSEBlock(version2: magic == Magic.lzfseV2)
                default:
                    let hex = String(magic, radix: 16)
                    throw DecodingError(
                        message: "bad block magic 0x\(String(repeating: "0", count: 8 - hex.count))\(hex)",
                        offset: inPos)
                }
            }
        }

        // MARK: Helpers

        @inline(__always)
        func load32(_ at: Int) -> UInt32 {
            UInt32(littleEndian: UnsafeRawPointer(src + at).loadUnaligned(as: UInt32.self))
        }

        @inline(__always)
        func load64(_ at: Int) -> UInt64 {
            UInt64(littleEndian: UnsafeRawPointer(src + at).loadUnaligned(as: UInt64.self))
        }

        @inline(__always)
        func load16(_ at: Int) -> UInt16 {
            UInt16(littleEndian: UnsafeRawPointer(src + at).loadUnaligned(as: UInt16.self))
        }

        /// Refuses a block whose declared output would pass expectedSize, before any of it is written.
        func reserve(_ count: Int, blockStart: Int) throws -> Int {
            guard count <= limit - outPos else {
                throw DecodingError(
                    message: "block of \(count) bytes at output offset \(outPos) would exceed expectedSize \(limit)",
                    offset: blockStart)
            }
            return outPos + count
        }

        // MARK: Raw blocks

        mutating func decodeRawBlock() throws {
            let blockStart = inPos
            guard srcCount - inPos >= 8 else {
                throw DecodingError(message: "truncated raw block header", offset: blockStart)
            }
            let count = Int(load32(inPos + 4))
            let dataStart = inPos + 8
            guard count <= srcCount - dataStart else {
                throw DecodingError(message: "raw block of \(count) bytes is truncated", offset: blockStart)
            }
            let end = try reserve(count, blockStart: blockStart)
            if count > 0 { UnsafeMutableRawPointer(dst + outPos).copyMemory(from: src + dataStart, byteCount: count) }
            outPos = end
            inPos = dataStart + count
        }

        // MARK: LZVN blocks

        mutating func decodeLZVNBlock() throws {
            let blockStart = inPos
            guard srcCount - inPos >= 12 else {
                throw DecodingError(message: "truncated LZVN block header", offset: blockStart)
            }
            let rawBytes = Int(load32(inPos + 4))
            let payloadBytes = Int(load32(inPos + 8))
            let payloadStart = inPos + 12
            guard payloadBytes <= srcCount - payloadStart else {
                throw DecodingError(
                    message: "LZVN block payload of \(payloadBytes) bytes is truncated", offset: blockStart)
            }
            let blockEnd = try reserve(rawBytes, blockStart: blockStart)
            try decodeLZVN(from: payloadStart, to: payloadStart + payloadBytes, blockEnd: blockEnd)
            inPos = payloadStart + payloadBytes
        }

        /// Decodes LZVN opcodes in src[start..<end] until the end-of-stream opcode, which must close
        /// the payload exactly, with output filling exactly up to `blockEnd`.
        ///
        /// Opcodes (L literal bytes follow the opcode; M bytes are then copied from D back):
        ///   LLMMMDDD D8               small distance (L 0-3, M 3-10, D 11 bits)
        ///   LLMMM111 D16              large distance
        ///   LLMMM110                  previous distance (L >= 1; with L = 0 these are the specials)
        ///   101LLMMM DDDDDDMM D8      medium distance (M 3-34, D 14 bits)
        ///   1110LLLL / 11100000 L8    literal only (L 1-15 / 16-271)
        ///   1111MMMM / 11110000 M8    match only, previous distance (M 1-15 / 16-271)
        ///   0x06 end of stream (plus 7 padding bytes); 0x0e, 0x16 no-ops;
        ///   0x1e…0x3e (step 8), 0x70…0x7f and 0xd0…0xdf undefined.
        mutating func decodeLZVN(from start: Int, to end: Int, blockEnd: Int) throws {
            var p = start
            var out = outPos
            var distance = 0  // the block's "previous distance"; 0 is never valid
            defer { outPos = out }
            while true {
                guard p < end else {
                    throw DecodingError(message: "LZVN payload ends without an end-of-stream opcode", offset: p)
                }
                let op = src[p]
                let literalLength: Int
                let matchLength: Int
                let opLength: Int
                switch op {
                case 0xf0...0xff:
                    if op == 0xf0 {
                        guard end - p >= 2 else { throw truncatedOpcode(p) }
                        matchLength = Int(src[p + 1]) + 16
                        opLength = 2
                    } else {
                        matchLength = Int(op & 0x0f)
                        opLength = 1
                    }
                    literalLength = 0
                case 0xe0...0xef:
                    if op == 0xe0 {
                        guard end - p >= 2 else { throw truncatedOpcode(p) }
                        literalLength = Int(src[p + 1]) + 16
                        opLength = 2
                    } else {
                        literalLength = Int(op & 0x0f)
                        opLength = 1
                    }
                    matchLength = 0
                case 0xa0...0xbf:
                    guard end - p >= 3 else { throw truncatedOpcode(p) }
                    let operand = Int(load16(p + 1))
                    literalLength = Int((op &>> 3) & 3)
                    matchLength = (Int(op & 7) << 2 | operand & 3) + 3
                    distance = operand >> 2
                    opLength = 3
                case 0x70...0x7f, 0xd0...0xdf:
                    throw DecodingError(message: "undefined LZVN opcode 0x\(String(op, radix: 16))", offset: p)
                default:
                    literalLength = Int(op &>> 6)
                    matchLength = Int((op &>> 3) & 7) + 3
                    switch op & 7 {
                    case 6:
                        if op >= 0x40 {
                            opLength = 1  // previous distance
                        } else if op == 0x06 {
                            guard end - p == 8 else {
                                throw DecodingError(
                                    message: "LZVN end-of-stream opcode does not end the block payload", offset: p)
                            }
                            guard out == blockEnd else {
                                throw DecodingError(
                                    message:
                                        "LZVN block decodes to \(out - outPos) bytes, header says \(blockEnd - outPos)",
                                    offset: p)
                            }
                            return
                        } else if op == 0x0e || op == 0x16 {
                            p += 1  // no-op
                            continue
                        } else {
                            throw DecodingError(message: "undefined LZVN opcode 0x\(String(op, radix: 16))", offset: p)
                        }
                    case 7:
                        guard end - p >= 3 else { throw truncatedOpcode(p) }
                        distance = Int(load16(p + 1))
                        opLength = 3
                    default:
                        guard end - p >= 2 else { throw truncatedOpcode(p) }
                        distance = Int(op & 7) << 8 | Int(src[p + 1])
                        opLength = 2
                    }
                }
                let literalStart = p + opLength
                guard literalLength <= end - literalStart else {
                    throw DecodingError(message: "LZVN literal runs past the block payload", offset: p)
                }
                guard literalLength + matchLength <= blockEnd - out else {
                    throw DecodingError(message: "LZVN block decodes to more bytes than its header says", offset: p)
                }
                if matchLength > 0 {
                    // Distance 0 is never valid: a block starts with none, and no opcode encodes it.
                    guard distance > 0 else {
                        throw DecodingError(message: "LZVN match has no distance", offset: p)
                    }
                    guard distance <= out + literalLength else {
                        throw DecodingError(
                            message: "LZVN match distance \(distance) reaches before the start of the output",
                            offset: p)
                    }
                }
                if literalLength > 0 {
                    UnsafeMutableRawPointer(dst + out).copyMemory(from: src + literalStart, byteCount: literalLength)
                    out += literalLength
                }
                if matchLength > 0 {
                    LZFSE.copyMatch(dst, at: out, distance: distance, count: matchLength)
                    out += matchLength
                }
                p = literalStart + literalLength
            }
        }

        func truncatedOpcode(_ p: Int) -> DecodingError {
            DecodingError(message: "LZVN opcode runs past the block payload", offset: p)
        }

        // MARK: LZFSE blocks

        /// Reads a `bvx2` header: three packed 64-bit words, then bit-packed frequencies.
        func readV2Header(at blockStart: Int) throws -> FSEBlockHeader {
            guard srcCount - blockStart >= 32 else {
                throw DecodingError(message: "truncated LZFSE (bvx2) block header", offset: blockStart)
            }
            var h = FSEBlockHeader()
            h.rawBytes = Int(load32(blockStart + 4))
            let v0 = load64(blockStart + 8)
            let v1 = load64(blockStart + 16)
            let v2 = load64(blockStart + 24)
            func field(_ v: UInt64, _ lsb: UInt64, _ width: UInt64) -> Int {
                Int(truncatingIfNeeded: (v &>> lsb) & ((1 &<< width) &- 1))
            }
            h.literalCount = field(v0, 0, 20)
            h.literalPayloadBytes = field(v0, 20, 20)
            h.matchCount = field(v0, 40, 20)
            h.literalBits = field(v0, 60, 3) - 7
            h.literalStates = (field(v1, 0, 10), field(v1, 10, 10), field(v1, 20, 10), field(v1, 30, 10))
            h.lmdPayloadBytes = field(v1, 40, 20)
            h.lmdBits = field(v1, 60, 3) - 7
            h.headerSize = field(v2, 0, 32)
            h.lState = field(v2, 32, 10)
            h.mState = field(v2, 42, 10)
            h.dState = field(v2, 52, 10)
            guard h.headerSize >= 32 else {
                throw DecodingError(message: "bvx2 header size \(h.headerSize) is below 32", offset: blockStart)
            }
            guard h.headerSize <= srcCount - blockStart else {
                throw DecodingError(message: "truncated LZFSE (bvx2) block header", offset: blockStart)
            }
            // No frequency bytes at all means every table is empty.
            if h.headerSize > 32 {
                try readPackedFrequencies(from: blockStart + 32, to: blockStart + h.headerSize, into: &h.freqs)
            }
            return h
        }

        /// Decodes the 360 frequencies of a bvx2 header, a prefix code read from the low bits:
        ///   x0 -> 0 or 1 (2 bits)      x01 -> 2 or 3 (3 bits)    xx011 -> 4...7 (5 bits)
        ///   xxxx0111 -> 8...23 (8 bits)    xxxxxxxxxx1111 -> 24...1047 (14 bits)
        /// The code must end exactly at the header's end, with under 8 bits left over.
        func readPackedFrequencies(from start: Int, to end: Int, into freqs: inout [UInt16]) throws {
            var p = start
            var accum: UInt32 = 0
            var count = 0
            for i in 0..<Alphabet.totalFreqs {
                while p < end, count <= 24 {
                    accum |= UInt32(src[p]) << UInt32(count)
                    count += 8
                    p += 1
                }
                let value: UInt32
                let length: Int
                if accum & 1 == 0 {
                    (value, length) = ((accum >> 1) & 1, 2)
                } else if accum & 2 == 0 {
                    (value, length) = (2 + ((accum >> 2) & 1), 3)
                } else if accum & 4 == 0 {
                    (value, length) = (4 + ((accum >> 3) & 3), 5)
                } else if accum & 8 == 0 {
                    (value, length) = (8 + ((accum >> 4) & 0xf), 8)
                } else {
                    (value, length) = (24 + ((accum >> 4) & 0x3ff), 14)
                }
                guard length <= count else {
                    throw DecodingError(message: "frequency tables run past the block header", offset: p)
                }
                freqs[i] = UInt16(value)
                accum >>= UInt32(length)
                count -= length
            }
            guard count < 8, p == end else {
                throw DecodingError(message: "frequency tables do not end at the block header's end", offset: p)
            }
        }

        /// Reads a `bvx1` header: the reference's C struct as stored (little-endian, 772 bytes
        /// including 2 bytes of trailing alignment padding).
        func readV1Header(at blockStart: Int) throws -> FSEBlockHeader {
            let size = 772
            guard srcCount - blockStart >= size else {
                throw DecodingError(message: "truncated LZFSE (bvx1) block header", offset: blockStart)
            }
            var h = FSEBlockHeader()
            h.headerSize = size
            h.rawBytes = Int(load32(blockStart + 4))
            // +8 n_payload_bytes: unused, as in the reference (the two payload sizes below govern).
            h.literalCount = Int(load32(blockStart + 12))
            h.matchCount = Int(load32(blockStart + 16))
            h.literalPayloadBytes = Int(load32(blockStart + 20))
            h.lmdPayloadBytes = Int(load32(blockStart + 24))
            h.literalBits = Int(Int32(bitPattern: load32(blockStart + 28)))
            h.literalStates = (
                Int(load16(blockStart + 32)), Int(load16(blockStart + 34)),
                Int(load16(blockStart + 36)), Int(load16(blockStart + 38))
            )
            h.lmdBits = Int(Int32(bitPattern: load32(blockStart + 40)))
            h.lState = Int(load16(blockStart + 44))
            h.mState = Int(load16(blockStart + 46))
            h.dState = Int(load16(blockStart + 48))
            for i in 0..<Alphabet.totalFreqs { h.freqs[i] = load16(blockStart + 50 + 2 * i) }
            return h
        }

        mutating func decodeLZFSEBlock(version2: Bool) throws {
            let blockStart = inPos
            let h = version2 ? try readV2Header(at: blockStart) : try readV1Header(at: blockStart)
            let payloadStart = blockStart + h.headerSize
            guard h.literalPayloadBytes <= srcCount - payloadStart,
                h.lmdPayloadBytes <= srcCount - payloadStart - h.literalPayloadBytes
            else {
                throw DecodingError(message: "LZFSE block payload is truncated", offset: blockStart)
            }
            guard h.literalCount <= Limits.literalsPerBlock else {
                throw DecodingError(
                    message: "block declares \(h.literalCount) literals, over the 40000 maximum", offset: blockStart)
            }
            guard h.matchCount <= Limits.matchesPerBlock else {
                throw DecodingError(
                    message: "block declares \(h.matchCount) matches, over the 10000 maximum", offset: blockStart)
            }
            // The encoder pads literals to a multiple of 4 and every L,M,D triple emits at least one
            // byte; holding blocks to that bounds the work per output byte (the reference doesn't check).
            guard h.literalCount <= h.rawBytes + 3, h.matchCount <= h.rawBytes else {
                throw DecodingError(
                    message:
                        "block declares \(h.literalCount) literals and \(h.matchCount) matches for \(h.rawBytes) bytes",
                    offset: blockStart)
            }
            let (s0, s1, s2, s3) = h.literalStates
            guard s0 < Alphabet.literalStates, s1 < Alphabet.literalStates, s2 < Alphabet.literalStates,
                s3 < Alphabet.literalStates, h.lState < Alphabet.lStates, h.mState < Alphabet.mStates,
                h.dState < Alphabet.dStates
            else {
                throw DecodingError(message: "block header has an FSE state out of range", offset: blockStart)
            }
            let blockEnd = try reserve(h.rawBytes, blockStart: blockStart)

            try h.freqs.withUnsafeBufferPointer { all in
                let l = UnsafeBufferPointer(rebasing: all[Alphabet.lFreqs..<Alphabet.mFreqs])
                let m = UnsafeBufferPointer(rebasing: all[Alphabet.mFreqs..<Alphabet.dFreqs])
                let d = UnsafeBufferPointer(rebasing: all[Alphabet.dFreqs..<Alphabet.literalFreqs])
                let lit = UnsafeBufferPointer(rebasing: all[Alphabet.literalFreqs..<Alphabet.totalFreqs])
                try checkFrequencies(l, nStates: Alphabet.lStates, name: "L", offset: blockStart)
                try checkFrequencies(m, nStates: Alphabet.mStates, name: "M", offset: blockStart)
                try checkFrequencies(d, nStates: Alphabet.dStates, name: "D", offset: blockStart)
                try checkFrequencies(lit, nStates: Alphabet.literalStates, name: "literal", offset: blockStart)
                lTable.withUnsafeMutableBufferPointer {
                    buildValueTable(
                        l, nStates: Alphabet.lStates, extraBits: Alphabet.lExtraBits, bases: Alphabet.lBase, into: $0)
                }
                mTable.withUnsafeMutableBufferPointer {
                    buildValueTable(
                        m, nStates: Alphabet.mStates, extraBits: Alphabet.mExtraBits, bases: Alphabet.mBase, into: $0)
                }
                dTable.withUnsafeMutableBufferPointer {
                    buildValueTable(
                        d, nStates: Alphabet.dStates, extraBits: Alphabet.dExtraBits, bases: Alphabet.dBase, into: $0)
                }
                literalTable.withUnsafeMutableBufferPointer { buildLiteralTable(lit, into: $0) }
            }

            // Literals come in four interleaved streams, so the count rounds up to a multiple of 4.
            let literalCount = (h.literalCount + 3) & ~3
            let lmdStart = payloadStart + h.literalPayloadBytes
            try decodeLiterals(
                count: literalCount, states: h.literalStates, finalBits: h.literalBits,
                lowerBound: blockStart, end: lmdStart)
            try decodeMatches(
                h, literalCount: literalCount, lmdStart: lmdStart, blockStart: blockStart, blockEnd: blockEnd)
            inPos = lmdStart + h.lmdPayloadBytes
        }

        /// Decodes the block's literals into `literals`. The stream may read back into the block
        /// header (its first refills load whole words), as the reference allows, but no further.
        mutating func decodeLiterals(
            count: Int, states: (Int, Int, Int, Int), finalBits: Int, lowerBound: Int, end: Int
        ) throws {
            var reader = try BackwardBitReader(
                base: src, baseCount: srcCount, lowerBound: lowerBound, end: end, finalBits: finalBits,
                what: "literal")
            if literals.count < count { literals = [UInt8](repeating: 0, count: count) }
            var (s0, s1, s2, s3) = states
            let mask = Alphabet.literalStates - 1
            try literalTable.withUnsafeBufferPointer { table in
                try literals.withUnsafeMutableBufferPointer { out in
                    @inline(__always)
                    func next(_ state: inout Int) -> UInt8 {
                        let e = table[state]
                        let bits = Int(truncatingIfNeeded: reader.pull(Int(e & 0xff)))
                        state = (Int(e >> 16) &+ bits) & mask
                        return UInt8(truncatingIfNeeded: e >> 8)
                    }
                    var i = 0
                    while i < count {
                        // 4 × at most 10 bits per refill.
                        guard reader.refill() else {
                            throw DecodingError(message: "literal bit stream is truncated", offset: reader.position)
                        }
                        out[i] = next(&s0)
                        out[i + 1] = next(&s1)
                        out[i + 2] = next(&s2)
                        out[i + 3] = next(&s3)
                        i += 4
                    }
                }
            }
        }

        /// Decodes the block's L, M, D triples, writing literals and matches to the output.
        mutating func decodeMatches(
            _ h: FSEBlockHeader, literalCount: Int, lmdStart: Int, blockStart: Int, blockEnd: Int
        ) throws {
            var reader = try BackwardBitReader(
                base: src, baseCount: srcCount, lowerBound: lmdStart, end: lmdStart + h.lmdPayloadBytes,
                finalBits: h.lmdBits, what: "L,M,D")
            var lState = h.lState
            var mState = h.mState
            var dState = h.dState
            var distance = -1  // a match must set it before one may reuse it
            var literalPos = 0
            var out = outPos
            defer { outPos = out }
            let dst = self.dst
            let matchCount = h.matchCount
            try lTable.withUnsafeBufferPointer { lTab in
                try mTable.withUnsafeBufferPointer { mTab in
                    try dTable.withUnsafeBufferPointer { dTab in
                        try literals.withUnsafeBufferPointer { lits in
                            @inline(__always)
                            func next(_ table: UnsafeBufferPointer<ValueEntry>, _ state: inout Int, _ mask: Int) -> Int
                            {
                                let e = table[state]
                                let bits = reader.pull(Int(e.totalBits))
                                let vbits = UInt64(e.valueBits)
                                state = (Int(e.delta) &+ Int(truncatingIfNeeded: bits &>> vbits)) & mask
                                return Int(e.base) &+ Int(truncatingIfNeeded: bits & ((1 &<< vbits) &- 1))
                            }
                            for _ in 0..<matchCount {
                                // L, M and D take at most 14 + 17 + 23 = 54 bits per refill.
                                guard reader.refill() else {
                                    throw DecodingError(
                                        message: "L,M,D bit stream is truncated", offset: reader.position)
                                }
                                let l = next(lTab, &lState, Alphabet.lStates - 1)
                                let m = next(mTab, &mState, Alphabet.mStates - 1)
                                let d = next(dTab, &dState, Alphabet.dStates - 1)
                                if d != 0 { distance = d }  // 0 means "same distance as before"
                                guard l <= literalCount - literalPos else {
                                    throw DecodingError(
                                        message: "literal run of \(l) passes the block's \(literalCount) literals",
                                        offset: reader.position)
                                }
                                guard l + m <= blockEnd - out else {
                                    throw DecodingError(
                                        message: "LZFSE block decodes to more than its declared \(h.rawBytes) bytes",
                                        offset: blockStart)
                                }
                                // Checked even when m is 0, as the reference does.
                                guard distance > 0 else {
                                    throw DecodingError(
                                        message: "match reuses a distance before the block has set one",
                                        offset: reader.position)
                                }
                                guard distance <= out + l else {
                                    throw DecodingError(
                                        message: "match distance \(distance) reaches before the start of the output",
                                        offset: reader.position)
                                }
                                if l > 0, let base = lits.baseAddress {
                                    LZFSE.copyBytes(to: dst + out, from: base + literalPos, count: l)
                                    out += l
                                    literalPos += l
                                }
                                if m > 0 {
                                    LZFSE.copyMatch(dst, at: out, distance: distance, count: m)
                                    out += m
                                }
                            }
                        }
                    }
                }
            }
            guard out == blockEnd else {
                throw DecodingError(
                    message: "LZFSE block decodes to \(out - (blockEnd - h.rawBytes)) bytes, header says \(h.rawBytes)",
                    offset: blockStart)
            }
        }
    }

    /// Copies non-overlapping bytes; short runs byte by byte, which beats a call for the usual sizes.
    @inline(__always)
    private static func copyBytes(to dst: UnsafeMutablePointer<UInt8>, from src: UnsafePointer<UInt8>, count: Int) {
        if count <= 16 {
            for i in 0..<count { dst[i] = src[i] }
        } else {
            UnsafeMutableRawPointer(dst).copyMemory(from: src, byteCount: count)
        }
    }

    /// Copies `count` bytes from `distance` back, LZ style: when they overlap, the copy repeats
    /// the last `distance` bytes. Callers have checked 1 <= distance <= at and the output room.
    @inline(__always)
    private static func copyMatch(_ out: UnsafeMutablePointer<UInt8>, at: Int, distance: Int, count: Int) {
        let target = out + at
        let source = UnsafePointer(target - distance)
        if distance >= count {
            copyBytes(to: target, from: source, count: count)
        } else if distance == 1 {
            target.initialize(repeating: source.pointee, count: count)
        } else {
            // The bytes from source on repeat with period `distance`, so each pass can copy
            // everything written so far, doubling the run without overlapping it.
            var done = 0
            while done < count {
                let n = Swift.min(count - done, distance + done)
                copyBytes(to: target + done, from: source, count: n)
                done += n
            }
        }
    }
}
