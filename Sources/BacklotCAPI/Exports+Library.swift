import BacklotBasics
import CBacklot
import Foundation

// The library's own functions: version, memory, errors, and the _init functions of the structs.

private let versionString = StaticCString(BacklotVersion.current)
private let statusNames: [backlot_status: StaticCString] = Dictionary(
    uniqueKeysWithValues: CStatus.names.map { ($0.0, StaticCString($0.1)) }
        + BAErrorCodeNames.all.map { (CStatus.apple($0.0), StaticCString("BACKLOT_ERR_BA_\($0.1)")) })
private let unknownStatusName = StaticCString("BACKLOT_ERR_UNKNOWN")

@_cdecl("backlot_version")
public func backlotVersion() -> UnsafePointer<CChar>? { versionString.constant }

@_cdecl("backlot_free")
public func backlotFree(_ buffer: UnsafeMutableRawPointer?) { free(buffer) }

@_cdecl("backlot_last_error_message")
public func backlotLastErrorMessage() -> UnsafePointer<CChar>? {
    LastError.current.map { UnsafePointer($0.message) } ?? LastError.none.constant
}

@_cdecl("backlot_last_error_status")
public func backlotLastErrorStatus() -> backlot_status { LastError.current?.status ?? CStatus.ok }

@_cdecl("backlot_status_name")
public func backlotStatusName(_ status: backlot_status) -> UnsafePointer<CChar>? {
    (statusNames[status] ?? unknownStatusName).constant
}

@_cdecl("backlot_config_init")
public func backlotConfigInit(_ config: UnsafeMutablePointer<backlot_config>?) {
    guard let config else { return }
    config.pointee = CDefaults.config
}

@_cdecl("backlot_pack_info_init")
public func backlotPackInfoInit(_ info: UnsafeMutablePointer<backlot_pack_info>?) {
    guard let info else { return }
    info.pointee = CDefaults.packInfo
}

@_cdecl("backlot_pack_info_clear")
public func backlotPackInfoClear(_ info: UnsafeMutablePointer<backlot_pack_info>?) {
    guard let info else { return }
    free(info.pointee.id)
    info.pointee = CDefaults.packInfo
}

@_cdecl("backlot_url_download_init")
public func backlotURLDownloadInit(_ download: UnsafeMutablePointer<backlot_url_download>?) {
    guard let download else { return }
    download.pointee = CDefaults.urlDownload
}

@_cdecl("backlot_download_delegate_init")
public func backlotDownloadDelegateInit(_ delegate: UnsafeMutablePointer<backlot_download_delegate>?) {
    guard let delegate else { return }
    delegate.pointee = CDefaults.downloadDelegate
}
