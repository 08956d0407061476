import CBacklot

/// The managers C callers hold handles to.
let managers = HandleTable<CManager>()

/// Runs the body of an exported function: BACKLOT_OK when it returns, else the status of what
/// it threw, recorded with its message as the calling thread's last error. No Swift error
/// crosses into C.
func cCall(_ body: () throws -> Void) -> backlot_status {
    do {
        try body()
        return CStatus.ok
    } catch {
        let (status, message) = CStatus.of(error)
        LastError.set(status, message)
        return status
    }
}

/// The open manager of a C handle.
/// - Throws: ``CallError`` for NULL, a forged handle or a closed one.
func manager(_ handle: OpaquePointer?) throws -> CManager {
    let m = try managers.lookup(UInt(bitPattern: handle))
    guard !m.isClosed else { throw CallError.closedHandle }
    return m
}

/// Writes through an out pointer the caller must give.
/// - Throws: ``CallError`` (invalid argument) when it is NULL.
func output<T>(_ pointer: UnsafeMutablePointer<T>?, _ what: String) throws -> UnsafeMutablePointer<T> {
    guard let pointer else { throw CallError.invalidArgument("\(what) is NULL") }
    return pointer
}

/// A C string list as exported functions hand it out (`char ***`; public because they are).
public typealias CStringListOut = UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>

/// Runs an exported function that answers a list of strings through `list` (named `what` in
/// errors) and `count`: both are set to NULL and 0 first, so that a failed call leaves nothing to
/// free, then filled, sorted, from what `body` returns for the open manager of `handle`.
func cListCall(
    _ handle: OpaquePointer?, _ list: CStringListOut?, _ what: String, _ count: UnsafeMutablePointer<Int>?,
    _ body: (CManager) throws -> [String]
) -> backlot_status {
    list?.pointee = nil
    count?.pointee = 0
    return cCall {
        let m = try manager(handle)
        let listOut = try output(list, what)
        let countOut = try output(count, "count")
        CMemory.writeList(try body(m), to: listOut, count: countOut)
    }
}
