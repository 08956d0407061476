import BacklotBasics
import BacklotClient
import CBacklot
import Foundation

// backlot_schedule_download … backlot_with_exclusive_control: Apple's BADownloadManager, called from C.

@_cdecl("backlot_schedule_download")
public func backlotScheduleDownload(
    _ handle: OpaquePointer?, _ download: UnsafePointer<backlot_url_download>?
) -> backlot_status {
    cCall {
        let m = try manager(handle)
        try m.downloads().scheduleDownload(try CURLDownload.read(download))
    }
}

@_cdecl("backlot_start_foreground_download")
public func backlotStartForegroundDownload(
    _ handle: OpaquePointer?, _ download: UnsafePointer<backlot_url_download>?
) -> backlot_status {
    cCall {
        let m = try manager(handle)
        try m.downloads().startForegroundDownload(try CURLDownload.read(download))
    }
}

@_cdecl("backlot_cancel_download")
public func backlotCancelDownload(_ handle: OpaquePointer?, _ identifier: UnsafePointer<CChar>?) -> backlot_status {
    cCall {
        let m = try manager(handle)
        let id = try CMemory.string(identifier, "identifier")
        let downloads = try m.downloads()
        guard let download = try downloads.fetchCurrentDownloads().first(where: { $0.identifier == id }) else {
            throw BAError(.downloadNotScheduled)
        }
        try downloads.cancel(download)
    }
}

@_cdecl("backlot_current_downloads")
public func backlotCurrentDownloads(
    _ handle: OpaquePointer?, _ ids: CStringListOut?, _ count: UnsafeMutablePointer<Int>?
) -> backlot_status {
    cListCall(handle, ids, "identifiers", count) { m in try m.downloads().fetchCurrentDownloads().map(\.identifier) }
}

@_cdecl("backlot_set_download_delegate")
public func backlotSetDownloadDelegate(
    _ handle: OpaquePointer?, _ delegate: UnsafePointer<backlot_download_delegate>?, _ context: UnsafeMutableRawPointer?
) -> backlot_status {
    cCall {
        let m = try manager(handle)
        let downloads = try m.downloads()
        var made: CDownloadDelegate? = nil
        if delegate != nil {
            let functions = try CMemory.sized(
                delegate, "delegate", defaults: CDefaults.downloadDelegate, releaseSizes: [CDefaults.firstDelegateSize])
            made = CDownloadDelegate(functions, context: CContext(pointer: context))
        }
        // The download manager holds its delegate weakly: the manager's slot keeps it alive. Both
        // are set under the slot's lock, so that two calls at once leave one of them in place.
        let previous = m.delegate.withLock { slot -> CDownloadDelegate? in
            defer {
                slot = made
                downloads.delegate = made
            }
            return slot
        }
        previous?.retire()  // once this returns, the previous delegate's functions run no more
        if m.isClosed {
            // Closed meanwhile: close took the slot before this call filled it.
            m.delegate.withLock { slot -> CDownloadDelegate? in
                defer { slot = nil }
                return slot
            }?.retire()
            throw CallError.closedHandle
        }
    }
}

@_cdecl("backlot_with_exclusive_control")
public func backlotWithExclusiveControl(
    _ handle: OpaquePointer?, _ timeout: Double, _ body: backlot_exclusive_fn?, _ context: UnsafeMutableRawPointer?
) -> backlot_status {
    var returned = CStatus.ok
    let status = cCall {
        let m = try manager(handle)
        guard let body else { throw CallError.invalidArgument("body is NULL") }
        guard !timeout.isNaN else { throw CallError.invalidArgument("timeout is NaN") }
        let downloads = try m.downloads()
        var failure: (any Error)? = nil
        let run: (Bool, (any Error)?) -> Void = { acquired, error in
            if acquired { returned = body(context) } else { failure = error }
        }
        if timeout < 0 || timeout.isInfinite {
            downloads.withExclusiveControl(run)
        } else {
            downloads.withExclusiveControl(beforeDate: Date(timeIntervalSinceNow: timeout), perform: run)
        }
        if let failure { throw failure }
    }
    if status == CStatus.ok, returned != CStatus.ok {
        LastError.set(returned, "the body of backlot_with_exclusive_control returned \(CStatus.name(of: returned))")
    }
    return status == CStatus.ok ? returned : status
}

/// A C `backlot_url_download` as Apple's download.
enum CURLDownload {
    /// - Throws: ``CallError`` (invalid argument) for NULL, an uninitialised struct, a missing
    ///   identifier or URL, a URL that does not parse, or a size below -1.
    static func read(_ pointer: UnsafePointer<backlot_url_download>?) throws -> URLDownload {
        let d = try CMemory.sized(
            pointer, "download", defaults: CDefaults.urlDownload, releaseSizes: [CDefaults.firstURLDownloadSize])
        let identifier = try CMemory.string(d.identifier, "download->identifier")
        guard !identifier.isEmpty else { throw CallError.invalidArgument("download->identifier is empty") }
        let text = try CMemory.string(d.url, "download->url")
        guard let url = URL(string: text), url.scheme != nil else {
            throw CallError.invalidArgument("download->url \(text) is not a URL")
        }
        let size: UInt64?
        switch d.file_size {
        case -1: size = nil
        case 0...: size = UInt64(d.file_size)
        default: throw CallError.invalidArgument("download->file_size is \(d.file_size): give the size, or -1")
        }
        let priority = Int(Swift.max(Int64(Int32.min), Swift.min(Int64(Int32.max), d.priority)))
        return URLDownload(
            identifier: identifier, url: url, fileSize: size, isEssential: d.essential != 0, priority: priority)
    }
}
