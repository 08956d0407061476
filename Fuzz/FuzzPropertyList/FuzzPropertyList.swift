import BacklotInfoPlist
import FuzzSupport

/// libFuzzer harness for ``PropertyListReader``: XML and binary (`bplist00`) property lists,
/// then the Background Assets Info.plist rules over whatever was read.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzDriver.bytes(data, size)
    if let root = try? PropertyListReader.read(bytes, source: "fuzz") {
        for finding in InfoPlistChecker().check(root) { _ = "\(finding)" }
    }
    return 0
}

@_cdecl("FuzzPropertyList_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    FuzzDriver.run(argc, argv, fuzz)
}
