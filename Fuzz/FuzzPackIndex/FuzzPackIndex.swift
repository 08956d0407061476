import BacklotFormat
import Foundation
import FuzzSupport

/// libFuzzer harness for a whole pack file's header and index: `PackHeader.decode` with the
/// input's size as the file size, then `PackIndex.decode` over the bytes the header points at.
///
/// The index's SHA-256 is not checked first, as `PackReader` does: whoever crafts a pack also
/// writes the header's digest, so the decoder must hold on its own.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzDriver.bytes(data, size)
    guard let header = try? PackHeader.decode(Array(bytes.prefix(PackHeader.size)), fileSize: UInt64(bytes.count), source: "fuzz") else { return 0 }
    // decode checked that offset + length == the input's size.
    let start = Int(header.indexOffset), end = start + Int(header.indexLength)
    guard let index = try? PackIndex.decode(Array(bytes[start..<end]), header: header, source: "fuzz") else { return 0 }
    for file in index.files {
        for ref in file.chunks where !index.chunks.indices.contains(ref) { fatalError("a file refers to a chunk that does not exist") }
    }
    return 0
}

/// `FuzzPackIndex --make-corpus DIR` writes the seed packs and exits; anything else is
/// libFuzzer's command line.
@_cdecl("FuzzPackIndex_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    let arguments = CommandLine.arguments
    if arguments.count == 3, arguments[1] == "--make-corpus" {
        do {
            try FuzzPackIndexCorpus.write(to: arguments[2])
            return 0
        } catch {
            print("FuzzPackIndex: \(error)")
            return 1
        }
    }
    return FuzzDriver.run(argc, argv, fuzz)
}
