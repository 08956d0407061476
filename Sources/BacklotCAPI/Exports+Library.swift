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

@_cdecl("backlot_abi_version")
public func backlotABIVersion() -> UInt32 { UInt32(BACKLOT_ABI_VERSION) }

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

@_cdecl("backlot_config_init_size")
public func backlotConfigInitSize(_ config: UnsafeMutablePointer<backlot_config>?, _ size: Int) {
    CMemory.initialise(config, size: size, with: CDefaults.config, end: CDefaults.configEnd)
}

@_cdecl("backlot_pack_info_init_size")
public func backlotPackInfoInitSize(_ info: UnsafeMutablePointer<backlot_pack_info>?, _ size: Int) {
    CMemory.initialise(info, size: size, with: CDefaults.packInfo, end: CDefaults.packInfoEnd)
}

@_cdecl("backlot_pack_info_clear")
public func backlotPackInfoClear(_ info: UnsafeMutablePointer<backlot_pack_info>?) {
    guard let info else { return }
    let size = info.pointee.size
    guard size >= CDefaults.firstPackInfoSize else { return }  // never initialised: nothing of ours in it
    free(info.pointee.id)
    CMemory.initialise(info, size: size, with: CDefaults.packInfo, end: CDefaults.packInfoEnd)
}

@_cdecl("backlot_url_download_init_size")
public func backlotURLDownloadInitSize(_ download: UnsafeMutablePointer<backlot_url_download>?, _ size: Int) {
    CMemory.initialise(download, size: size, with: CDefaults.urlDownload)
}

@_cdecl("backlot_download_delegate_init_size")
public func backlotDownloadDelegateInitSize(
    _ delegate: UnsafeMutablePointer<backlot_download_delegate>?, _ size: Int
) {
    CMemory.initialise(delegate, size: size, with: CDefaults.downloadDelegate)
}
