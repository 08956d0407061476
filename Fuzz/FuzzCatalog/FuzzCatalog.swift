import BacklotCrypto
import BacklotProtocol
import Foundation
import FuzzSupport

/// The key the seed corpus's envelopes are signed with (a fixed test key, never a real one), so
/// that unaltered seeds pass `SignedEnvelope.open` and reach the payload decoders.
let trusted: Ed25519.PublicKey = {
    guard let key = try? Ed25519.PrivateKey(rawRepresentation: FuzzCatalogKey.seed) else {
        fatalError("the fuzz key does not load")
    }
    return key.publicKey
}()

/// libFuzzer harness for signed documents: `SignedEnvelope.decode` and `open`, `Catalog.decode`,
/// `Catalog.verify`, `KeyList.decode` and `KeyList.accept`, over the input as an envelope and as a
/// bare payload (both are JSON, so one corpus serves all of them).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzDriver.bytes(data, size)
    _ = try? Catalog.decode(bytes, source: "fuzz")
    _ = try? KeyList.decode(bytes, source: "fuzz")
    if let envelope = try? SignedEnvelope.decode(bytes, source: "fuzz") {
        _ = try? Catalog.decode(envelope.payload, source: "fuzz")
        _ = try? KeyList.decode(envelope.payload, source: "fuzz")
    }
    _ = try? SignedEnvelope.open(bytes, expecting: Catalog.payloadType, trusting: [trusted], source: "fuzz")
    if let catalog = try? Catalog.verify(
        bytes, trusting: [trusted], app: "com.example.app", channel: .production,
        now: Date(timeIntervalSince1970: 1_700_000_000), source: "fuzz")
    {
        for entry in catalog.packs { _ = entry.release(forDevice: "fuzz-device") }
    }
    _ = try? KeyList(version: 1, keys: [trusted]).accept(next: bytes, source: "fuzz")
    return 0
}

/// `FuzzCatalog --make-corpus DIR` writes the seed corpus (signed with the fixed key) and exits;
/// anything else is libFuzzer's command line.
@_cdecl("FuzzCatalog_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    let arguments = CommandLine.arguments
    if arguments.count == 3, arguments[1] == "--make-corpus" {
        do {
            try FuzzCatalogCorpus.write(to: arguments[2])
            return 0
        } catch {
            print("FuzzCatalog: \(error)")
            return 1
        }
    }
    return FuzzDriver.run(argc, argv, fuzz)
}
