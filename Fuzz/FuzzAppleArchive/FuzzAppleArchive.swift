import BacklotAppleArchive
import BacklotBasics
import BacklotCodecs
import FuzzSupport

/// The input as an archive in memory.
struct InMemoryArchive: AppleArchiveSource {
    let bytes: [UInt8]
    var size: UInt64 { UInt64(bytes.count) }
    func read(count: Int, at offset: UInt64) throws -> [UInt8] {
        guard offset <= size else { return [] }
        return Array(bytes[Int(offset)..<Int(min(size, offset + UInt64(count)))])
    }
}

/// libFuzzer harness for Apple Archives (docs/format.md §13), as `verify`, `extract` and the
/// server read one: the block framing, each block's codec (zlib, LZMA, LZ4 in Apple's frames, and
/// our own LZFSE/LZVN decoder), every entry's header and data. The input is an archive; when it
/// starts with `DEC` and a codec letter, the rest is one block of that codec with a declared size
/// (the next two bytes × 64, at most 4 MiB). Nothing may trap, a decoded block must be exactly its
/// declared size, and memory must stay bounded by what is declared (`scripts/fuzz` runs it under
/// `-rss_limit_mb=512`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzDriver.bytes(data, size)
    if bytes.count >= 6, bytes.starts(with: Array("DEC".utf8)) {
        let expected = (Int(bytes[4]) | Int(bytes[5]) << 8) * 64
        let payload = Array(bytes.dropFirst(6))
        let decoded: [UInt8]?
        switch bytes[3] {
        case UInt8(ascii: "e"): decoded = try? LZFSE.decode(payload, expectedSize: expected)
        case UInt8(ascii: "z"): decoded = try? Zlib.decompress(payload, expectedSize: expected)
        case UInt8(ascii: "x"): decoded = try? LZMA.decompress(payload, expectedSize: expected)
        default: decoded = try? LZ4Frames.decompress(payload, expectedSize: expected)
        }
        if let decoded, decoded.count != expected { fatalError("a block decoded to other than its declared size") }
        return 0
    }
    guard let reader = try? AppleArchiveReader(InMemoryArchive(bytes: bytes), name: "fuzz") else { return 0 }
    var seen: UInt64 = 0
    let summary = try? reader.readAll { entry in
        .init(write: { seen += UInt64($0.count) }, finish: {})
    }
    if let summary, seen != summary.installSize { fatalError("the data read is not the install size") }
    return 0
}

@_cdecl("FuzzAppleArchive_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    FuzzDriver.run(argc, argv, fuzz)
}
