import BacklotBasics
import BacklotClient
import CBacklot
import Foundation

// backlot_contents, backlot_descriptor, backlot_path: the files of installed packs.

@_cdecl("backlot_contents")
public func backlotContents(
    _ handle: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ packID: UnsafePointer<CChar>?,
    _ data: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?, _ length: UnsafeMutablePointer<Int>?
) -> backlot_status {
    data?.pointee = nil
    length?.pointee = 0
    return cCall {
        let dataOut = try output(data, "data")
        let lengthOut = try output(length, "length")
        let full = try CFiles.resolve(handle, path, packID)
        let file = try FileDescriptor.openForReading(full)
        defer { file.close() }
        let size = try file.size()
        guard let count = Int(exactly: size) else {
            throw BacklotError(
                .io, "the file is too large to read into memory (\(size) bytes)", context: full,
                hint: "map it instead: backlot_descriptor and mmap")
        }
        let buffer = try CMemory.allocate(count, for: full, hint: "map it instead: backlot_descriptor and mmap")
        buffer.storeBytes(of: 0, as: UInt8.self)  // a 0-byte file: one byte holding 0
        do {
            let got = try file.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: count), at: 0)
            guard got == count else {
                throw BacklotError(.io, "the file ended at byte \(got) of \(count) while it was read", context: full)
            }
        } catch {
            free(buffer)
            throw error
        }
        dataOut.pointee = buffer.assumingMemoryBound(to: UInt8.self)
        lengthOut.pointee = count
    }
}

@_cdecl("backlot_descriptor")
public func backlotDescriptor(
    _ handle: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ packID: UnsafePointer<CChar>?,
    _ fd: UnsafeMutablePointer<Int32>?
) -> backlot_status {
    fd?.pointee = -1
    return cCall {
        let fdOut = try output(fd, "fd")
        let full = try CFiles.resolve(handle, path, packID)
        fdOut.pointee = try FileDescriptor.openForReading(full).rawValue
    }
}

@_cdecl("backlot_path")
public func backlotPath(
    _ handle: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ packID: UnsafePointer<CChar>?,
    _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> backlot_status {
    out?.pointee = nil
    return cCall {
        let target = try output(out, "out")
        target.pointee = CMemory.duplicate(try CFiles.resolve(handle, path, packID))
    }
}

/// Where a file of an installed pack is, from C arguments.
enum CFiles {
    static func resolve(
        _ handle: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ packID: UnsafePointer<CChar>?
    ) throws -> String {
        let m = try manager(handle)
        let file = try CMemory.string(path, "path")
        let id = try CMemory.optionalString(packID, "pack_id")
        return try m.manager.path(for: file, searchingInAssetPackWithID: id)
    }
}
