import BacklotBasics
import BacklotCrypto

/// The fixed 64-byte header at the start of every pack: format version and where the index is.
///
/// See `docs/format.md` §2.
public struct PackHeader: Sendable, Hashable {
    /// `BKLTPACK`.
    public static let magic: [UInt8] = Array("BKLTPACK".utf8)
    /// The header's size in bytes.
    public static let size = 64
    /// The format versions this build reads and writes: 1, and 2 (a pack with a zstd
    /// dictionary and a compact index, `docs/format.md` §3).
    public static let formatVersions: ClosedRange<UInt16> = 1...2
    /// The largest index a reader accepts.
    /// The largest index, in bytes: one limit, enforced identically when packaging (``PackWriter``
    /// refuses to write a larger one), when the server processes an upload (``PackReader``), and by
    /// clients (which read the index with one request of at most this size). About a million
    /// files of ordinary path lengths.
    public static let maximumIndexLength: UInt64 = 64 << 20

    public let formatVersion: UInt16
    public let indexOffset: UInt64
    public let indexLength: UInt64
    /// SHA-256 of the index: the pack's identity (its pack digest).
    public let indexDigest: SHA256Digest

    public init(formatVersion: UInt16 = 1, indexOffset: UInt64, indexLength: UInt64, indexDigest: SHA256Digest) {
        precondition(PackHeader.formatVersions.contains(formatVersion), "no such format version")
        self.formatVersion = formatVersion
        self.indexOffset = indexOffset
        self.indexLength = indexLength
        self.indexDigest = indexDigest
    }

    /// The 64 header bytes.
    public var encoded: [UInt8] {
        var w = ByteWriter()
        w.append(PackHeader.magic)
        w.u16(formatVersion)
        w.u16(0)
        w.u32(0)
        w.u64(indexOffset)
        w.u64(indexLength)
        w.digest(indexDigest)
        return w.bytes
    }

    /// Decodes and checks a header.
    /// - Parameter fileSize: the pack's total size, when known (the index must end exactly there).
    /// - Throws: ``BacklotError/Code/invalidInput`` for a file that is not a pack or is of another
    ///   format version; ``BacklotError/Code/corruptArchive`` for a damaged header.
    public static func decode(_ bytes: [UInt8], fileSize: UInt64?, source: String) throws -> PackHeader {
        guard bytes.count >= size else {
            // What is there starts like a pack: a truncated one. Anything else (an empty file, a
            // 6-byte text) is not a pack at all: invalid input, like a long file with another magic.
            guard !bytes.isEmpty, magic.starts(with: bytes.prefix(magic.count)) else {
                throw BacklotError(
                    .invalidInput,
                    "not a Backlot pack: the file is \(bytes.count) bytes, shorter than a pack header (\(size) bytes), and does not start with BKLTPACK",
                    context: source,
                    hint: "give a .pack file made by `backlot package`")
            }
            throw BacklotError(
                .corruptArchive, "the file is \(bytes.count) bytes, shorter than a pack header (\(size) bytes)",
                context: source, hint: "the pack is truncated: package or download it again")
        }
        guard Array(bytes[0..<8]) == magic else {
            throw BacklotError(
                .invalidInput, "not a Backlot pack (the file does not start with BKLTPACK)", context: source,
                hint: "give a .pack file made by `backlot package`")
        }
        var r = ByteReader(Array(bytes[8..<size]), base: 8, source: source)
        let version = try r.u16("the format version")
        guard formatVersions.contains(version) else {
            throw BacklotError(
                .invalidInput,
                "the pack has format version \(version); this Backlot reads versions \(formatVersions.lowerBound)…\(formatVersions.upperBound)",
                context: source,
                hint: version > formatVersions.upperBound
                    ? "it was made by a newer Backlot: upgrade Backlot to read it" : "package it again")
        }
        let reserved = try r.u16("reserved bytes")
        let flags = try r.u32("the flags")
        guard reserved == 0, flags == 0 else { throw r.fail("reserved header bytes or flags are not zero") }
        let offset = try r.u64("the index offset")
        let length = try r.u64("the index length")
        let digest = try r.digest("the index SHA-256")
        guard offset >= UInt64(size) else {
            throw BacklotError(.corruptArchive, "the index offset \(offset) points into the header", context: source)
        }
        guard length >= UInt64(PackIndex.magic.count) + 12 else {
            throw BacklotError(
                .corruptArchive, "the header declares a \(length)-byte index, too short to hold one", context: source,
                hint: "the pack is damaged or crafted")
        }
        guard length <= maximumIndexLength else {
            throw BacklotError(
                .corruptArchive, "the header declares a \(length)-byte index; at most \(maximumIndexLength) is allowed",
                context: source,
                hint: "the pack is damaged or crafted")
        }
        let (end, overflow) = offset.addingReportingOverflow(length)
        if let fileSize, overflow || end != fileSize {
            throw BacklotError(
                .corruptArchive,
                "the index (offset \(offset), \(length) bytes) does not end at the end of the file (\(fileSize) bytes)",
                context: source, hint: "the pack is truncated or has extra bytes: package or download it again")
        }
        return PackHeader(formatVersion: version, indexOffset: offset, indexLength: length, indexDigest: digest)
    }
}
