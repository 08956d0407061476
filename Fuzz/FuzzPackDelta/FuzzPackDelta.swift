import BacklotCrypto
import BacklotFormat
import BacklotZstd
import Foundation
import FuzzSupport

/// libFuzzer harness for delta files (`docs/format.md` §14), as a client reads one: the prefix
/// (`PackDelta.decodePrefix`, with the digests the input names so that the fuzzer gets past
/// them), the index rebuilt from it against a fixed base pack's index (`rebuildIndex`), the table
/// resolved against the indexes (`entries(base:target:source:)`), and each entry's frame applied
/// to the base chunks it names (`PackDelta.apply`, which checks each target's SHA-256). A rebuilt
/// frame must be exactly its declared size; nothing may trap, and memory must stay within what the prefix and
/// the entries declare (`scripts/fuzz` runs it under `-rss_limit_mb=512`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzDriver.bytes(data, size)
    guard bytes.count >= PackDelta.headerSize, let base = FuzzPackDeltaBase.shared else { return 0 }
    let baseDigest = SHA256Digest(bytes: bytes[16..<48])
    let targetDigest = SHA256Digest(bytes: bytes[48..<80])
    func u32(_ at: Int) -> UInt64 { (0..<4).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) } }
    func u64(_ at: Int) -> UInt64 { (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) } }
    // The prefix's length as its header declares it (header + index delta + table), as the catalog would.
    let declared = UInt64(PackDelta.headerSize) &+ u32(80) &+ u64(88)
    guard declared <= UInt64(bytes.count) else { return 0 }
    let prefix = Array(bytes.prefix(Int(declared)))
    guard
        let delta = try? PackDelta.decodePrefix(
            prefix, base: baseDigest, target: targetDigest, fileSize: UInt64(bytes.count), source: "fuzz")
    else { return 0 }
    let decompressor = ZstdDecompressor()
    // The target index: rebuilt from the delta when it can be (then checked); else the base's own,
    // so that a version-2 table is still resolved and its frames applied.
    var target = base.decoded
    // Version 3's early frames (after the prefix) and index bases are read from the base's chunks.
    let earlyFrames =
        delta.earlyRange.upperBound <= UInt64(bytes.count)
        ? Array(bytes[Int(delta.earlyRange.lowerBound)..<Int(delta.earlyRange.upperBound)]) : []
    if let index = try? delta.rebuildIndex(
        from: base.index, expected: targetDigest, earlyFrames: earlyFrames, base: base.decoded,
        baseChunk: { n in base.chunks[base.decoded.chunks[n].id] ?? [] }, using: decompressor, source: "fuzz")?.bytes
    {
        guard SHA256.hash(index) == targetDigest else { fatalError("a rebuilt index without the expected SHA-256") }
        if let version = PackIndex.formatVersion(ofIndex: index),
            let decoded = try? PackIndex.decode(
                index,
                header: PackHeader(
                    formatVersion: version, indexOffset: 64, indexLength: UInt64(index.count), indexDigest: targetDigest
                ),
                source: "fuzz")
        {
            target = decoded
        }
    }
    guard let entries = try? delta.entries(base: base.decoded, target: target, source: "fuzz") else { return 0 }
    var offset = delta.prefixLength
    for entry in entries.prefix(64) {
        guard entry.offset == offset, entry.range.upperBound <= UInt64(bytes.count), entry.outputSize <= 4 << 20 else {
            fatalError("an entry out of place or too large was accepted")
        }
        offset = entry.range.upperBound
        let frame = bytes[Int(entry.offset)..<Int(entry.range.upperBound)]
        let reference = entry.bases.flatMap { base.chunks[$0] ?? [] }
        let rebuilt = frame.withUnsafeBytes {
            try? PackDelta.apply(entry, frame: $0, prefix: reference, using: decompressor, source: "fuzz")
        }
        if let rebuilt, rebuilt.count != entry.outputSize {
            fatalError("a rebuilt frame is not the size its entry declares")
        }
    }
    return 0
}

/// `FuzzPackDelta --make-corpus DIR` writes the seed deltas and exits; anything else is
/// libFuzzer's command line.
@_cdecl("FuzzPackDelta_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    let arguments = CommandLine.arguments
    if arguments.count == 3, arguments[1] == "--make-corpus" {
        do {
            try FuzzPackDeltaBase.writeCorpus(to: arguments[2])
            return 0
        } catch {
            print("FuzzPackDelta: \(error)")
            return 1
        }
    }
    return FuzzDriver.run(argc, argv, fuzz)
}
