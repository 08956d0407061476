import BacklotBasics
import BacklotClient
import CBacklot
import Foundation

/// The status a C caller gets for an error: the stable numbers of `backlot.h`, one per
/// ``BacklotError/Code``, Apple's `ManagedBackgroundAssetsError` cases, and Apple's `BAErrorCode`
/// values at 1000 + Apple's number.
enum CStatus {
    static let ok = backlot_status(BACKLOT_OK)
    static let invalidArgument = backlot_status(BACKLOT_ERR_INVALID_ARGUMENT)
    static let closedHandle = backlot_status(BACKLOT_ERR_CLOSED_HANDLE)
    static let internalError = backlot_status(BACKLOT_ERR_INTERNAL)
    static let cancelled = backlot_status(BACKLOT_ERR_CANCELLED)
    static let unavailable = backlot_status(BACKLOT_ERR_UNAVAILABLE)

    /// Every named status, with its name in the header (``backlot_status_name``).
    static let names: [(backlot_status, String)] = [
        (backlot_status(BACKLOT_OK), "BACKLOT_OK"),
        (backlot_status(BACKLOT_ERR_INVALID_ARGUMENT), "BACKLOT_ERR_INVALID_ARGUMENT"),
        (backlot_status(BACKLOT_ERR_CLOSED_HANDLE), "BACKLOT_ERR_CLOSED_HANDLE"),
        (backlot_status(BACKLOT_ERR_INTERNAL), "BACKLOT_ERR_INTERNAL"),
        (backlot_status(BACKLOT_ERR_USAGE), "BACKLOT_ERR_USAGE"),
        (backlot_status(BACKLOT_ERR_INVALID_MANIFEST), "BACKLOT_ERR_INVALID_MANIFEST"),
        (backlot_status(BACKLOT_ERR_INVALID_JSON), "BACKLOT_ERR_INVALID_JSON"),
        (backlot_status(BACKLOT_ERR_INVALID_PACK_ID), "BACKLOT_ERR_INVALID_PACK_ID"),
        (backlot_status(BACKLOT_ERR_INVALID_SOURCE), "BACKLOT_ERR_INVALID_SOURCE"),
        (backlot_status(BACKLOT_ERR_INVALID_INPUT), "BACKLOT_ERR_INVALID_INPUT"),
        (backlot_status(BACKLOT_ERR_CORRUPT_ARCHIVE), "BACKLOT_ERR_CORRUPT_ARCHIVE"),
        (backlot_status(BACKLOT_ERR_IO), "BACKLOT_ERR_IO"),
        (backlot_status(BACKLOT_ERR_ALREADY_EXISTS), "BACKLOT_ERR_ALREADY_EXISTS"),
        (backlot_status(BACKLOT_ERR_LIBRARY), "BACKLOT_ERR_LIBRARY"),
        (backlot_status(BACKLOT_ERR_CHECK_FAILED), "BACKLOT_ERR_CHECK_FAILED"),
        (backlot_status(BACKLOT_ERR_UNTRUSTED), "BACKLOT_ERR_UNTRUSTED"),
        (backlot_status(BACKLOT_ERR_CONFLICT), "BACKLOT_ERR_CONFLICT"),
        (backlot_status(BACKLOT_ERR_NOT_FOUND), "BACKLOT_ERR_NOT_FOUND"),
        (backlot_status(BACKLOT_ERR_FORBIDDEN), "BACKLOT_ERR_FORBIDDEN"),
        (backlot_status(BACKLOT_ERR_QUOTA_EXCEEDED), "BACKLOT_ERR_QUOTA_EXCEEDED"),
        (backlot_status(BACKLOT_ERR_CANCELLED), "BACKLOT_ERR_CANCELLED"),
        (backlot_status(BACKLOT_ERR_STALE_CATALOG), "BACKLOT_ERR_STALE_CATALOG"),
        (backlot_status(BACKLOT_ERR_UNAVAILABLE), "BACKLOT_ERR_UNAVAILABLE"),
        (backlot_status(BACKLOT_ERR_TLS), "BACKLOT_ERR_TLS"),
        (backlot_status(BACKLOT_ERR_ASSET_PACK_NOT_FOUND), "BACKLOT_ERR_ASSET_PACK_NOT_FOUND"),
        (backlot_status(BACKLOT_ERR_FILE_NOT_FOUND), "BACKLOT_ERR_FILE_NOT_FOUND"),
    ]

    /// The status of each ``BacklotError/Code``, by its name.
    static let ofCode: [String: backlot_status] = [
        BacklotError.Code.usage.name: backlot_status(BACKLOT_ERR_USAGE),
        BacklotError.Code.invalidManifest.name: backlot_status(BACKLOT_ERR_INVALID_MANIFEST),
        BacklotError.Code.invalidJSON.name: backlot_status(BACKLOT_ERR_INVALID_JSON),
        BacklotError.Code.invalidPackID.name: backlot_status(BACKLOT_ERR_INVALID_PACK_ID),
        BacklotError.Code.invalidSource.name: backlot_status(BACKLOT_ERR_INVALID_SOURCE),
        BacklotError.Code.invalidInput.name: backlot_status(BACKLOT_ERR_INVALID_INPUT),
        BacklotError.Code.corruptArchive.name: backlot_status(BACKLOT_ERR_CORRUPT_ARCHIVE),
        BacklotError.Code.io.name: backlot_status(BACKLOT_ERR_IO),
        BacklotError.Code.alreadyExists.name: backlot_status(BACKLOT_ERR_ALREADY_EXISTS),
        BacklotError.Code.library.name: backlot_status(BACKLOT_ERR_LIBRARY),
        BacklotError.Code.checkFailed.name: backlot_status(BACKLOT_ERR_CHECK_FAILED),
        BacklotError.Code.untrusted.name: backlot_status(BACKLOT_ERR_UNTRUSTED),
        BacklotError.Code.conflict.name: backlot_status(BACKLOT_ERR_CONFLICT),
        BacklotError.Code.notFound.name: backlot_status(BACKLOT_ERR_NOT_FOUND),
        BacklotError.Code.forbidden.name: backlot_status(BACKLOT_ERR_FORBIDDEN),
        BacklotError.Code.quotaExceeded.name: backlot_status(BACKLOT_ERR_QUOTA_EXCEEDED),
        BacklotError.Code.cancelled.name: backlot_status(BACKLOT_ERR_CANCELLED),
        BacklotError.Code.staleCatalog.name: backlot_status(BACKLOT_ERR_STALE_CATALOG),
        BacklotError.Code.unavailable.name: backlot_status(BACKLOT_ERR_UNAVAILABLE),
        BacklotError.Code.tls.name: backlot_status(BACKLOT_ERR_TLS),
    ]

    /// The name of a status, as `backlot_status_name` gives it.
    static func name(of status: backlot_status) -> String {
        if let named = names.first(where: { $0.0 == status }) { return named.1 }
        if let apple = BAErrorCodeNames.all.first(where: { apple($0.0) == status }) {
            return "BACKLOT_ERR_BA_\(apple.1)"
        }
        return "BACKLOT_ERR_UNKNOWN (\(status))"
    }

    /// Apple's `BAErrorCode` `code` as a status.
    static func apple(_ code: Int) -> backlot_status {
        guard let value = Int32(exactly: code), value >= 0, value < 1_000_000 else { return internalError }
        return backlot_status(BACKLOT_ERR_BA_BASE) + value
    }

    /// The status and the message a C caller is given for `error`.
    static func of(_ error: any Error) -> (backlot_status, String) {
        switch error {
        case let e as CallError: return (e.status, e.message)
        case let e as BacklotError: return (ofCode[e.code.name] ?? internalError, e.description)
        case let e as ManagedBackgroundAssetsError:
            switch e {
            case .assetPackNotFound: return (backlot_status(BACKLOT_ERR_ASSET_PACK_NOT_FOUND), e.description)
            case .fileNotFound: return (backlot_status(BACKLOT_ERR_FILE_NOT_FOUND), e.description)
            }
        case let e as BackgroundDownloadError: return (apple(e.code), e.description)
        case let e as BAError: return (apple(e.code.rawValue), e.description)
        case let e as DownloadManager.DeliveredError:
            return (e.code.map(apple) ?? backlot_status(BACKLOT_ERR_IO), e.message)
        case is CancellationError: return (cancelled, "the operation was cancelled")
        case let e as CocoaError:
            // Foundation's file operations (making the container's folders): an operating-system failure.
            let what = e.filePath ?? e.userInfo[NSFilePathErrorKey] as? String ?? "a file"
            let why = (e.userInfo[NSUnderlyingErrorKey] as? NSError)?.localizedDescription ?? e.localizedDescription
            return (
                backlot_status(BACKLOT_ERR_IO),
                "\(what): \(why)\n  hint: the container path must be a folder this process may create and write"
            )
        default: return (internalError, "an unexpected error inside libbacklot: \(error)")
        }
    }
}

/// A failure the C layer itself reports (a NULL argument, a closed handle): its status and message.
struct CallError: Error {
    let status: backlot_status
    let message: String

    static func invalidArgument(_ what: String) -> CallError {
        CallError(status: CStatus.invalidArgument, message: "invalid argument: \(what)")
    }

    static let closedHandle = CallError(
        status: CStatus.closedHandle,
        message:
            "the manager handle is closed, or is not one libbacklot opened\n  hint: open a manager with backlot_manager_open and use it until backlot_manager_close"
    )
}
