/// A C string the library makes once and hands out for the life of the process (the version, the
/// status names, ""). `@unchecked Sendable` is proven by its use: written once, before it is
/// shared, never written or freed again, so every thread only ever reads it.
// Safe because: written once before it is shared, never written or freed again (see above).
// Tested: `capi_test.c: test_version_and_names`.
struct StaticCString: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<CChar>

    init(_ text: String) { pointer = CMemory.duplicate(text) }

    var constant: UnsafePointer<CChar> { UnsafePointer(pointer) }
}
