import BacklotFormat
import FuzzSupport

/// libFuzzer harness for the manifest parser: `PackManifest.parse` (every rule, every
/// diagnostic) and `load` on the same bytes. Thrown errors are answers; traps are findings.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzDriver.bytes(data, size)
    if let result = try? PackManifest.parse(bytes, source: "fuzz") {
        for d in result.diagnostics { _ = "\(d)" }
        if result.manifest != nil, (try? PackManifest.load(bytes, source: "fuzz")) == nil {
            fatalError("parse accepted a manifest that load refuses")
        }
    }
    return 0
}

@_cdecl("FuzzManifestParser_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    FuzzDriver.run(argc, argv, fuzz)
}
