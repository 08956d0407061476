/// A caller's `void *context`, carried to its callbacks. `@unchecked Sendable` is proven by what
/// the library does with it: nothing but hand it back, unread, to the caller's own functions; the
/// header leaves what those do with it, from the threads it names, to the caller.
// Safe because: the library never reads or writes through it (see above).
// Tested: `capi_test.c: test_cancel_and_close`.
struct CContext: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer?
}
