import BacklotBasics

/// The start of an Apple Archive (`.aar`, what `ba-package` writes), checked without decompressing:
/// either a plain archive (entries starting `AA01`, or legacy `YAA1`) or a compressed stream
/// (`pbz` + an algorithm byte, a block size, then blocks). See shared notes on the format in
/// docs/format.md §13.
public enum AppleArchiveHeader: Sendable, Hashable {
    /// Uncompressed entries; the first entry's header is `headerLength` bytes.
    case plain(headerLength: Int)
    /// A block-compressed stream: `e` LZFSE, `z` zlib, `x` LZMA, `4` LZ4, `b` LZBITMAP.
    case compressed(algorithm: Character, blockSize: UInt64)

    /// The bytes ``check(_:fileSize:source:)`` needs from the start of the file.
    public static let prefixLength = 28

    /// Checks the start of the file at `path`; returns its header and the file's size.
    public static func check(
        fileAt path: String, source: String? = nil
    ) throws -> (header: AppleArchiveHeader, size: UInt64) {
        let fd = try FileDescriptor.openForReading(path)
        defer { fd.close() }
        let size = try fd.size()
        let head = try fd.read(count: Int(min(UInt64(prefixLength), size)), at: 0)
        return (try check(head, fileSize: size, source: source ?? path), size)
    }

    /// Checks the first bytes of a file that claims to be an Apple Archive.
    /// - Throws: ``BacklotError/Code/invalidInput`` saying what is wrong.
    public static func check(_ bytes: [UInt8], fileSize: UInt64, source: String) throws -> AppleArchiveHeader {
        func bad(_ message: String) -> BacklotError {
            BacklotError(
                .invalidInput, "not an Apple Archive: \(message)", context: source,
                hint: "upload the .aar that `ba-package` wrote, unchanged")
        }
        guard bytes.count >= 6 else { throw bad("the file has \(bytes.count) bytes") }
        let magic = String(decoding: bytes[0..<4], as: UTF8.self)
        if magic == "AA01" || magic == "YAA1" {
            let length = Int(bytes[4]) | Int(bytes[5]) << 8
            guard length >= 6, UInt64(length) <= fileSize else {
                throw bad("the first entry's header length \(length) is impossible")
            }
            // The header holds fields of a 3-letter key and a subtype character.
            if length >= 10 {
                let key = bytes[6..<min(length, bytes.count)].prefix(3)
                guard key.count < 3 || key.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A || $0 >= 0x30 && $0 <= 0x39 }) else {
                    throw bad("the first entry's header does not start with a field key")
                }
            }
            return .plain(headerLength: length)
        }
        guard magic.hasPrefix("pbz") else { throw bad("it starts with neither AA01 nor pbz") }
        let algorithm = Character(UnicodeScalar(bytes[3]))
        guard "ezx4b".contains(algorithm) else { throw bad("'\(algorithm)' is not a known compression") }
        guard bytes.count >= 28 else { throw bad("the stream header is truncated") }
        func be64(_ at: Int) -> UInt64 { bytes[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        let blockSize = be64(4)
        let raw = be64(12)
        let compressed = be64(20)
        guard blockSize >= 1, blockSize <= 64 << 20 else {
            throw bad("block size \(blockSize) is outside 1 byte…64 MiB")
        }
        guard raw <= blockSize, compressed >= 1, compressed <= fileSize - 28 else {
            throw bad("the first block (\(raw) bytes from \(compressed)) does not fit the block size or the file")
        }
        return .compressed(algorithm: algorithm, blockSize: blockSize)
    }
}
