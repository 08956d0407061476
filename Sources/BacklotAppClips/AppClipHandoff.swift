import BacklotBasics
import BacklotClient
import Foundation

/// Hands an App Clip's downloaded packs to the full app when it is installed (iOS keeps what the
/// clip downloaded for the app): every pack the clip holds whose index SHA-256 is the one the
/// app's verified catalog lists for the app's device is moved (hard-linked, each file checked
/// against its SHA-256 first) into the app's container; the others are left for the app to download.
///
/// ```swift
/// let report = try AppClipHandoff.handoff(fromClipContainer: "clip/", toAppContainer: "app/")
/// print(report.moved)    // ["Levels"]
/// ```
public enum AppClipHandoff {
    public struct Report: Sendable, Hashable {
        /// Packs now installed in the app's container.
        public var moved: [String] = []
        /// Packs left behind, with the reason.
        public var left: [Left] = []
    }

    public struct Left: Sendable, Hashable {
        public let id: String
        public let reason: String
    }

    /// - Parameters:
    ///   - keepClipCopy: leave the clip's copy in place (by default it is removed once the app has
    ///     it); the files are then copied, never hard-linked, so the two containers share no inode.
    ///   A file whose size is not the one the pack's index lists is refused before it is read.
    /// - Throws: ``BacklotError/Code/invalidInput`` when either path is not a container (it holds
    ///   no `state.sqlite`: nothing is created), or when the app's container has never verified a
    ///   catalog; ``BacklotError/Code/untrusted`` when its stored catalog no longer verifies. A
    ///   pack with a damaged file in the clip's container, or whose folder there is reached through
    ///   a symbolic link (it is neither read nor removed), is left behind, with the reason.
    public static func handoff(
        fromClipContainer clipPath: String, toAppContainer appPath: String, keepClipCopy: Bool = false,
        now: Date = Date()
    ) throws -> Report {
        let clip = try ClientContainer(existingAt: clipPath)
        let app = try ClientContainer(existingAt: appPath)
        guard clip.path != app.path else {
            throw BacklotError(.usage, "the clip's and the app's containers are the same folder", context: clip.path)
        }
        guard let catalog = try app.lastVerifiedCatalog(now: now) else {
            throw BacklotError(
                .invalidInput, "the app's container has not verified a catalog yet", context: app.path,
                hint:
                    "let the app fetch its catalog first (backlot fetch --catalog URL --trust KEY --container \(appPath), or the agent's install event)"
            )
        }
        var report = Report()
        for installed in try clip.installed() {
            guard let entry = catalog.packs.first(where: { $0.id.rawValue == installed.id }) else {
                report.left.append(Left(id: installed.id, reason: "the app's catalog does not list it"))
                continue
            }
            let release = entry.release(forDevice: app.deviceID)
            guard release.indexSHA256.hex == installed.digest else {
                report.left.append(
                    Left(
                        id: installed.id,
                        reason:
                            "the app's catalog lists another release (version \(release.version)); the app downloads it"
                    ))
                continue
            }
            do {
                try app.adopt(installed, from: clip, moving: !keepClipCopy)
                report.moved.append(installed.id)
            } catch let e as BacklotError where e.code == .corruptArchive || e.code == .untrusted {
                report.left.append(
                    Left(
                        id: installed.id, reason: "damaged in the clip's container (\(e.message)); the app downloads it"
                    ))
            }
        }
        return report
    }
}
