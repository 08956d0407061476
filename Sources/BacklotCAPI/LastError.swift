import CBacklot
import Foundation

/// The last failure of each thread (`backlot_last_error_message`, `backlot_last_error_status`):
/// kept in the thread's dictionary as a C string the library owns, valid until the thread's next
/// failure replaces it (or the thread ends).
final class LastError {
    let status: backlot_status
    let message: UnsafeMutablePointer<CChar>

    private init(status: backlot_status, message: String) {
        self.status = status
        self.message = CMemory.duplicate(message)
    }

    deinit { free(message) }

    private static let key = "org.backlot.capi.lastError"

    /// An empty C string, for a thread that has not failed.
    static let none = StaticCString("")

    /// Records a failure of the calling thread.
    static func set(_ status: backlot_status, _ message: String) {
        Thread.current.threadDictionary[key] = LastError(status: status, message: message)
    }

    /// The calling thread's last failure, nil when it has none.
    static var current: LastError? { Thread.current.threadDictionary[key] as? LastError }
}
