import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Which files the processes of this machine hold open or mapped, from Linux's `/proc`
/// (`/proc/PID/fd/*` and `/proc/PID/maps`), for the processes this one may look at (its user's,
/// or all for root). What frees space must never delete a file an app is reading.
///
/// ```swift
/// if !OpenFileTable.anyHeld(under: releaseFolder) { FileSystem.removeTree(releaseFolder) }
/// ```
public enum OpenFileTable {
    /// Whether any process holds `path` open or mapped, or (for a folder) a file under it. A path
    /// that cannot be resolved is reported held (never deleted on a guess).
    public static func anyHeld(under path: String) -> Bool {
        guard let real = FileSystem.realPath(path) else { return FileSystem.exists(path) }
        let exact = Array(real.utf8)
        let prefix = Array((real.hasSuffix("/") ? real : real + "/").utf8)
        func matches(_ target: some Collection<UInt8>) -> Bool {
            target.starts(with: prefix) || target.elementsEqual(exact)
        }
        for pid in (try? FileSystem.entryNames("/proc")) ?? [] where pid.allSatisfy({ $0 >= 48 && $0 <= 57 }) {
            let base = "/proc/" + String(decoding: pid, as: UTF8.self)
            for fd in (try? FileSystem.entryNames(base + "/fd")) ?? [] {
                if let target = link(base + "/fd/" + String(decoding: fd, as: UTF8.self)), matches(target) {
                    return true
                }
            }
            if let maps = untilEnd(base + "/maps", atMost: 64 << 20) {
                for line in maps.split(separator: UInt8(ascii: "\n")) {
                    // The path is the sixth field; it starts at the first "/".
                    if let slash = line.firstIndex(of: UInt8(ascii: "/")), matches(line[slash...]) {
                        return true
                    }
                }
            }
        }
        return false
    }

    /// A file the kernel makes as it is read (its size says 0): read until its end.
    private static func untilEnd(_ path: String, atMost limit: Int) -> [UInt8]? {
        guard let fd = try? FileDescriptor.openForReading(path) else { return nil }
        defer { fd.close() }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while out.count < limit {
            guard let n = try? chunk.withUnsafeMutableBytes({ try fd.read(into: $0, at: UInt64(out.count)) }), n > 0
            else { break }
            out += chunk[0..<n]
        }
        return out
    }

    private static func link(_ path: String) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBufferPointer { b in
            b.baseAddress!.withMemoryRebound(to: CChar.self, capacity: b.count) { readlink(path, $0, b.count) }
        }
        return n > 0 ? Array(buffer[0..<n]) : nil
    }
}
