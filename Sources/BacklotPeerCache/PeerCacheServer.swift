import BacklotBasics
import BacklotClient
import BacklotHTTPServer
import BacklotProtocol
import Foundation

/// Serves a container's installed chunks to the local network (docs/peer-cache.md): the two
/// requests of ``BacklotProtocol/PeerCacheLayout`` and nothing else, read-only, by chunk ID only.
///
/// Each chunk is read from the installed file that holds it and checked against its ID before it
/// is sent (``BacklotClient/InstalledChunks``). Connections are limited
/// (``PeerCacheSettings/connections`` in all, a 10 s idle time-out; not per address: an
/// installing device opens a connection a chunk, 8 at once, and libmicrohttpd counts a closed one
/// for a moment, so a per-address limit refused honest devices), bytes per second too (a 503 with
/// `Retry-After` past the budget), and while `isAllowed` says no (the device on battery or on a
/// metered network) every request is answered 503.
///
/// ```swift
/// let cache = try PeerCacheServer(containerPath: "/var/lib/game", settings: settings, isAllowed: { true })
/// print(cache.endpoints)   // ["10.0.0.2:7301"]
/// cache.stop()
/// ```
public final class PeerCacheServer: Sendable {
    /// What the cache did since it started.
    public struct Statistics: Sendable, Hashable {
        public var chunksSent = 0
        public var bytesSent: UInt64 = 0
        public var notHeld = 0
        public var refused = 0
        public var questions = 0
    }

    let settings: PeerCacheSettings
    let responder: PeerCacheResponder
    private let servers: [HTTPServer]
    /// `ADDRESS:PORT` of each listening socket.
    public let endpoints: [String]

    /// Starts listening on ``PeerCacheSettings/addresses(interfaces:)``.
    /// - Throws: ``BacklotError/Code/invalidInput`` when `containerPath` is not a container or the
    ///   settings name no address; ``BacklotError/Code/io`` when an address cannot be bound.
    public init(
        containerPath: String, settings: PeerCacheSettings, isAllowed: @escaping @Sendable () -> Bool = { true }
    ) throws {
        let responder = PeerCacheResponder(
            chunks: try InstalledChunks(containerPath: containerPath),
            budget: SendBudget(rate: settings.rate), isAllowed: isAllowed)
        self.responder = responder
        self.settings = settings
        var servers: [HTTPServer] = []
        var endpoints: [String] = []
        do {
            for address in try settings.addresses() {
                let server = try HTTPServer(
                    configuration: .init(
                        host: address, port: settings.port, connectionTimeout: 10, threads: 2,
                        connectionsPerAddress: 0, connectionLimit: settings.connections, connectionMemory: 16 << 10,
                        workerThreads: 2, bufferedBodyDeadline: 10),
                    handler: responder.route)
                servers.append(server)
                endpoints.append("\(address):\(server.port)")
            }
        } catch {
            for s in servers { s.stop(grace: 0) }
            throw error
        }
        self.servers = servers
        self.endpoints = endpoints
    }

    /// The port of the first listening socket (they share one unless the settings' port is 0).
    public var port: UInt16 { servers.first?.port ?? 0 }

    public var statistics: Statistics { responder.counters.withLock { $0 } }

    /// Stops listening; requests in flight get `grace` seconds.
    public func stop(grace: Double = 2) {
        for s in servers { s.stop(grace: grace) }
    }
}
