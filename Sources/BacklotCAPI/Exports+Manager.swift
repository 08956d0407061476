import BacklotBasics
import BacklotClient
import BacklotProtocol
import CBacklot
import Foundation

// backlot_manager_open … backlot_installed_packs: Apple's AssetPackManager, called from C.

@_cdecl("backlot_manager_open")
public func backlotManagerOpen(
    _ config: UnsafePointer<backlot_config>?, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> backlot_status {
    out?.pointee = nil
    return cCall {
        let target = try output(out, "out")
        let configuration = try CConfiguration.read(config)
        let opened = try CManager(configuration: configuration)
        target.pointee = OpaquePointer(bitPattern: managers.insert(opened))
    }
}

@_cdecl("backlot_manager_close")
public func backlotManagerClose(_ handle: OpaquePointer?) {
    managers.remove(UInt(bitPattern: handle))?.close()
}

@_cdecl("backlot_device_id")
public func backlotDeviceID(
    _ handle: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
)
    -> backlot_status
{
    out?.pointee = nil
    return cCall {
        let m = try manager(handle)
        try output(out, "out").pointee = CMemory.duplicate(m.manager.deviceID)
    }
}

@_cdecl("backlot_device_profile")
public func backlotDeviceProfile(
    _ handle: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
)
    -> backlot_status
{
    out?.pointee = nil
    return cCall {
        let m = try manager(handle)
        try output(out, "out").pointee = CMemory.duplicate(m.manager.deviceProfile.description)
    }
}

@_cdecl("backlot_ensure_local_availability")
public func backlotEnsureLocalAvailability(
    _ handle: OpaquePointer?, _ packID: UnsafePointer<CChar>?, _ progress: backlot_progress_fn?,
    _ context: UnsafeMutableRawPointer?
) -> backlot_status {
    cCall { try CInstall.ensure(handle, packID, latest: false, progress, CContext(pointer: context)) }
}

@_cdecl("backlot_ensure_latest_availability")
public func backlotEnsureLatestAvailability(
    _ handle: OpaquePointer?, _ packID: UnsafePointer<CChar>?, _ progress: backlot_progress_fn?,
    _ context: UnsafeMutableRawPointer?
) -> backlot_status {
    cCall { try CInstall.ensure(handle, packID, latest: true, progress, CContext(pointer: context)) }
}

@_cdecl("backlot_last_fetch")
public func backlotLastFetch(
    _ handle: OpaquePointer?, _ packID: UnsafePointer<CChar>?, _ report: UnsafeMutablePointer<backlot_fetch_report>?
) -> backlot_status {
    cCall {
        let m = try manager(handle)
        let id = try CMemory.string(packID, "pack_id")
        let target = try output(report, "report")
        let size = target.pointee.size
        guard size >= MemoryLayout<Int>.size else {
            throw CallError.invalidArgument("report's size is \(size): set report->size to sizeof *report")
        }
        guard let r = m.manager.lastFetchReport(forPackWithID: id) else {
            throw BacklotError(
                .notFound, "this manager has not downloaded \(id)", context: id,
                hint: "call backlot_ensure_local_availability first; a pack already installed downloads nothing")
        }
        var value = backlot_fetch_report(
            size: size, version: Int64(r.version), origin_bytes: r.downloadedBytes, peer_bytes: r.peerBytes,
            origin_chunks: UInt64(r.downloadedChunks), peer_chunks: UInt64(r.peerChunks),
            reused_chunks: UInt64(r.reusedChunks), linked_files: UInt64(r.linkedFiles))
        withUnsafeBytes(of: &value) { source in
            UnsafeMutableRawPointer(target).copyMemory(
                from: source.baseAddress!, byteCount: min(size, MemoryLayout<backlot_fetch_report>.size))
        }
    }
}

@_cdecl("backlot_cancel")
public func backlotCancel(_ handle: OpaquePointer?, _ packID: UnsafePointer<CChar>?) -> backlot_status {
    cCall {
        let m = try manager(handle)
        m.cancel(try CMemory.string(packID, "pack_id"))
    }
}

@_cdecl("backlot_check_for_updates")
public func backlotCheckForUpdates(
    _ handle: OpaquePointer?, _ ids: CStringListOut?, _ count: UnsafeMutablePointer<Int>?
) -> backlot_status {
    cListCall(handle, ids, "updating_ids", count) { m in
        let client = m.manager
        return Array(try BlockingPool.waitForAsync { try await client.checkForUpdates().updatingIDs })
    }
}

@_cdecl("backlot_remove")
public func backlotRemove(_ handle: OpaquePointer?, _ packID: UnsafePointer<CChar>?) -> backlot_status {
    cCall {
        let m = try manager(handle)
        let id = try CMemory.string(packID, "pack_id")
        let client = m.manager
        try BlockingPool.waitForAsync { try await client.remove(assetPackWithID: id) }
    }
}

@_cdecl("backlot_asset_pack")
public func backlotAssetPack(
    _ handle: OpaquePointer?, _ packID: UnsafePointer<CChar>?, _ info: UnsafeMutablePointer<backlot_pack_info>?
) -> backlot_status {
    cCall {
        let m = try manager(handle)
        let id = try CMemory.string(packID, "pack_id")
        let target = try output(info, "info")
        guard target.pointee.size >= CDefaults.firstPackInfoSize else {
            throw CallError.invalidArgument(
                "info's size is \(target.pointee.size): initialise it with backlot_pack_info_init")
        }
        let client = m.manager
        let (pack, status) = try BlockingPool.waitForAsync {
            let pack = try await client.assetPack(withID: id)
            return (pack, try await client.status(ofAssetPackWithID: id))
        }
        free(target.pointee.id)
        target.pointee.id = CMemory.duplicate(pack.id)
        target.pointee.version = Int64(pack.version)
        target.pointee.download_size = UInt64(clamping: max(0, pack.downloadSize))
        target.pointee.status = UInt32(truncatingIfNeeded: status.rawValue)
    }
}

@_cdecl("backlot_all_asset_packs")
public func backlotAllAssetPacks(
    _ handle: OpaquePointer?, _ ids: CStringListOut?, _ count: UnsafeMutablePointer<Int>?
) -> backlot_status {
    cListCall(handle, ids, "ids", count) { m in
        let client = m.manager
        return try BlockingPool.waitForAsync { try await client.allAssetPacks.map(\.id) }
    }
}

@_cdecl("backlot_installed_packs")
public func backlotInstalledPacks(
    _ handle: OpaquePointer?, _ ids: CStringListOut?, _ count: UnsafeMutablePointer<Int>?
) -> backlot_status {
    cListCall(handle, ids, "ids", count) { m in
        try ClientContainer(path: m.configuration.containerPath).installed().map(\.id)
    }
}
