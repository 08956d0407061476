import BacklotJSON
import FuzzSupport

/// libFuzzer harness for ``JSONReader``: the bytes are read as relaxed JSON (comments, trailing
/// commas) and as strict JSON; an accepted value is serialised and read again. Any thrown error
/// is a correct answer; a trap, an ASan report, a timeout or an out-of-memory is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzDriver.bytes(data, size)
    if let result = try? JSONReader(source: "fuzz").read(bytes) {
        let text = result.root.serialized()
        guard let again = try? JSONReader(source: "fuzz", allowsComments: false, allowsTrailingCommas: false).read(text),
              again.root == result.root else {
            fatalError("a serialised value does not read back as itself: \(text)")
        }
    }
    _ = try? JSONReader(source: "fuzz", allowsComments: false, allowsTrailingCommas: false).read(bytes)
    return 0
}

@_cdecl("FuzzJSONReader_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    FuzzDriver.run(argc, argv, fuzz)
}
