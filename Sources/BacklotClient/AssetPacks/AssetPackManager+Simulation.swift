import BacklotBasics
import BacklotProtocol
import Foundation

@_spi(Simulation)
extension AssetPackManager {
    /// What one simulated device's check did (``installNow(_:)``, ``synchronizeNow(packs:)``).
    public struct SimulatedCheck: Sendable {
        /// Seconds the catalog check took (the request, the key-list check and the signature).
        public let checkSeconds: Double
        /// The answer's `Backlot-Check-After`, if any.
        public let checkAfter: Int?
        /// The installs it made, each with its seconds.
        public let installs: [(report: FetchReport, seconds: Double)]
        /// The install that failed, if one did (the check stopped there; the next one tries again).
        public let failure: (pack: String, error: any Error)?
        /// The release of each pack it holds afterwards, by pack ID: its version, its name in the
        /// container and the folder its files are in.
        public let held: [String: (version: Int, release: String, folder: String)]
    }

    /// What one simulated device's catalog check found (``checkNow(packs:)``): what
    /// ``installNow(_:)`` is to bring to the catalog's releases.
    public struct SimulatedOffer: Sendable {
        /// Seconds the catalog check took (the request, the key-list check and the signature).
        public let checkSeconds: Double
        /// The answer's `Backlot-Check-After`, if any.
        public let checkAfter: Int?
        /// The packs to install or update, in pack ID order, each with the release offered.
        let due: [(id: String, release: Catalog.Release)]
        /// Whether ``installNow(_:)`` has a pack to install (else it only reads what is held).
        public var installs: Bool { !due.isEmpty }
    }

    /// What the agent's periodic check does first, on the calling thread: the catalog checked (its
    /// signature, key rotations, rollback and the device's rollout bucket, as always), and which of
    /// `packs` (every pack, when nil) the catalog offers this device in another release than the
    /// one installed. For fleet simulation (`backlot fleet`), where thousands of devices share a
    /// few threads and the process's ``BlockingPool`` would stand between them and the server; the
    /// fleet runs ``installNow(_:)`` where it chooses (its installs yield the cores to checks).
    /// - Throws: what the catalog check throws.
    public nonisolated func checkNow(packs wanted: Set<String>?) throws -> SimulatedOffer {
        let clock = ContinuousClock()
        let started = clock.now
        let offered = try offeredNow()
        let checkSeconds = (clock.now - started).inSeconds
        var due: [(id: String, release: Catalog.Release)] = []
        for (id, (_, release)) in offered.sorted(by: { $0.key < $1.key }) where wanted?.contains(id) ?? true {
            if (try? container.installed(id))?.digest == installedName(release) { continue }
            due.append((id, release))
        }
        return SimulatedOffer(checkSeconds: checkSeconds, checkAfter: lastCheckAfter.withLock { $0 }, due: due)
    }

    /// The rest of the agent's periodic check, on the calling thread: each pack `offer` found
    /// brought to its release through the installer (under the pack's install lock), then the
    /// device's report sent when due. An install's failure stops there, is counted in the device's
    /// next report, as the agent's are, and returned.
    /// - Throws: what reading the container's installed packs throws.
    public nonisolated func installNow(_ offer: SimulatedOffer) throws -> SimulatedCheck {
        let clock = ContinuousClock()
        var installs: [(FetchReport, Double)] = []
        var failure: (String, any Error)?
        defer { _ = reporter.sendIfDue() }
        for (id, release) in offer.due {
            let begun = clock.now
            reporter.record(.started, pack: id, version: release.version)
            do {
                let url = try catalogClient.archiveURL(release)
                let report = try install(
                    id, release, from: url, with: makeInstaller(),
                    progress: ProgressBox(Progress(totalUnitCount: Int64(max(1, release.installSize)))))
                reporter.record(.finished, pack: id, version: release.version)
                installs.append((report, (clock.now - begun).inSeconds))
            } catch {
                reporter.record(.failed, pack: id, version: release.version)
                failure = (id, error)
                break
            }
        }
        var held: [String: (Int, String, String)] = [:]
        for pack in try container.installed() {
            held[pack.id] = (pack.version, pack.digest, container.releaseFolder(pack.id, digest: pack.digest))
        }
        return SimulatedCheck(
            checkSeconds: offer.checkSeconds, checkAfter: offer.checkAfter, installs: installs, failure: failure,
            held: held)
    }

    /// ``checkNow(packs:)`` then ``installNow(_:)`` on the calling thread.
    public nonisolated func synchronizeNow(packs wanted: Set<String>?) throws -> SimulatedCheck {
        try installNow(checkNow(packs: wanted))
    }
}
