import BacklotBasics
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The content every simulated device holds, kept once: after a device installs a release, each
/// of its files is replaced by a hard link to the first copy of the same file of the same release
/// (`STORE/RELEASE/PATH`), which the installer had checked against its SHA-256 as it did this one.
/// So 10,000 devices holding a 64 MiB pack take 64 MiB of disk, not 640 GB, while every device
/// still downloaded and verified every byte it needed.
struct SharedContent: Sendable {
    let root: String

    /// Shares the files of one installed release folder (`CONTAINER/packs/PACK/RELEASE`).
    /// - Throws: ``BacklotError/Code/io`` when a file cannot be linked.
    func share(releaseFolder: String, release: String) throws {
        try share(folder: releaseFolder, into: root + "/" + release)
    }

    private func share(folder: String, into stored: String) throws {
        try FileSystem.makeDirectory(stored)
        for raw in try FileSystem.entryNames(folder) {
            let name = String(decoding: raw, as: UTF8.self)
            let path = folder + "/" + name
            let target = stored + "/" + name
            guard let st = try FileSystem.linkStatus(path) else { continue }
            switch st.kind {
            case .directory: try share(folder: path, into: target)
            case .regular:
                if try FileSystem.linkStatus(target) == nil {
                    do {
                        try FileSystem.hardLink(path, to: target)
                        continue
                    } catch {
                        // Two devices installing the same release at once: the other one's copy
                        // was kept first (EEXIST), and this device's gives way to it below.
                        guard try FileSystem.linkStatus(target) != nil else { throw error }
                    }
                }
                guard let kept = try FileSystem.linkStatus(target) else { continue }
                if kept.isSameFile(as: st) { continue }
                // Same release, same path: the same verified bytes. The device's copy gives way.
                let temporary = path + ".fleet-link"
                unlink(temporary)
                try FileSystem.hardLink(target, to: temporary)
                try FileSystem.rename(temporary, to: path)
            default: continue
            }
        }
    }
}
