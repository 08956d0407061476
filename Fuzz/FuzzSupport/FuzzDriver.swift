import CFuzzerDriver

/// Starts libFuzzer for a harness.
///
/// SwiftPM links every executable target with its entry point renamed to `<Target>_main`, so a
/// harness cannot rely on libFuzzer's own `main`; each harness defines that symbol and calls this
/// instead, which hands the command line to `LLVMFuzzerRunDriver`.
///
/// ```swift
/// @_cdecl("FuzzJSONReader_main")
/// public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
///     FuzzDriver.run(argc, argv, fuzz)
/// }
/// ```
public enum FuzzDriver {
    /// The harness's test function: the bytes of one input; returns 0.
    public typealias TestOneInput = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

    /// Runs libFuzzer over `test` with the process's command line; returns its exit status.
    public static func run(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
                           _ test: TestOneInput) -> CInt {
        var count = argc
        var vector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
        return LLVMFuzzerRunDriver(&count, &vector, test)
    }

    /// The bytes of one input as an array (empty for a null pointer).
    public static func bytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
        guard let data, size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: size))
    }
}
