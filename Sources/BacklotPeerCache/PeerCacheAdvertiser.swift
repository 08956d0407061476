import BacklotBasics
import BacklotProtocol
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Advertises a peer cache on the local link as a DNS-SD service (`_backlot._tcp` over mDNS)
/// through Avahi's `avahi-publish`, for as long as it runs. The instance name is random
/// (`backlot-` and 8 hex digits): it names neither the device nor an app.
///
/// ```swift
/// let advertiser = PeerCacheAdvertiser(port: cache.port)
/// try advertiser.start()
/// advertiser.stop()
/// ```
public final class PeerCacheAdvertiser: Sendable {
    public let port: UInt16
    public let name: String
    private let child = Mutex<ChildProcess?>(nil)

    public init(port: UInt16) {
        self.port = port
        name = "backlot-" + String(format: "%08x", UInt32.random(in: 0...UInt32.max))
    }

    /// Whether `avahi-publish` runs now.
    public var isRunning: Bool {
        child.withLock { c in c.map { !$0.hasExited } ?? false }
    }

    /// Starts `avahi-publish` (nothing when it runs already).
    /// - Throws: ``BacklotError/Code/io`` when `avahi-publish` is not installed or cannot start.
    public func start() throws {
        if isRunning { return }
        stop()  // one that ended (the Avahi daemon restarted) is reaped before another starts
        guard let publish = ChildProcess.findExecutable("avahi-publish") else {
            throw BacklotError(
                .io, "advertising the peer cache needs avahi-publish, which is not installed",
                hint:
                    "install Debian's avahi-utils and avahi-daemon, or set BacklotPeerCacheAdvertises to false and name this device in the others' BacklotPeers"
            )
        }
        let process = try ChildProcess.start(
            executable: publish, arguments: ["-s", name, PeerCacheLayout.serviceType, String(port)],
            environment: ProcessInfo.processInfo.environment, captureOutput: true)
        try process.release()
        child.withLock { $0 = process }
    }

    /// Withdraws the advertisement (ends `avahi-publish`).
    public func stop() {
        guard
            let process = child.withLock({ c -> ChildProcess? in
                defer { c = nil }
                return c
            })
        else { return }
        process.signalGroup(SIGTERM)
        _ = process.wait(until: .now + .seconds(2), keepingLast: 0)
    }
}
