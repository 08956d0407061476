import BacklotBasics
import BacklotPeerCache
import BacklotTaskScheduler

extension Agent {
    /// Whether the device may serve its chunks now: on mains power and an unmetered network.
    static func peerCacheAllowed(_ c: DeviceConditions) -> Bool {
        c.networkAvailable && !c.networkMetered && c.onExternalPower && !c.batteryLow
    }

    /// Starts the LAN peer cache when the configuration asks for it (``AgentConfiguration/peerCache``):
    /// what ``run()`` does first. A cache that cannot start is logged, and the agent goes on without it.
    func startPeerCache() {
        guard let settings = configuration.peerCache else { return }
        let conditions = self.conditions
        do {
            let server = try PeerCacheServer(
                containerPath: containerPath, settings: settings,
                isAllowed: { Agent.peerCacheAllowed(conditions.current()) })
            let advertiser = settings.advertises ? PeerCacheAdvertiser(port: server.port) : nil
            state.withLock {
                $0.peerCache = server
                $0.advertiser = advertiser
            }
            log("peer cache: serving this container's chunks on \(server.endpoints.joined(separator: ", "))")
            advertisePeerCache()
        } catch {
            log("peer cache: not started: \(error)")
        }
    }

    /// Advertises the peer cache on the local link while the device may serve, and withdraws it
    /// otherwise (each round; an `avahi-publish` that ended is started again).
    func advertisePeerCache() {
        guard let advertiser = state.withLock({ $0.advertiser }) else { return }
        if Agent.peerCacheAllowed(conditions.current()) && !isStopping {
            guard !advertiser.isRunning else { return }
            do {
                try advertiser.start()
                log("peer cache: advertised as \(advertiser.name) (_backlot._tcp, port \(advertiser.port))")
            } catch {
                let message = "\(error)"
                if state.withLock({ s -> Bool in
                    defer { s.lastAdvertiserProblem = message }
                    return s.lastAdvertiserProblem != message
                }) {
                    log("peer cache: not advertised: \(message)")
                }
            }
        } else if advertiser.isRunning {
            advertiser.stop()
            log("peer cache: advertisement withdrawn (on battery, metered or stopping)")
        }
    }

    /// Stops serving and advertising (the end of ``run()``).
    func stopPeerCache() {
        let (server, advertiser) = state.withLock { s in
            defer {
                s.peerCache = nil
                s.advertiser = nil
            }
            return (s.peerCache, s.advertiser)
        }
        advertiser?.stop()
        if let server {
            server.stop()
            let s = server.statistics
            log(
                "peer cache: stopped after sending \(s.chunksSent) chunks (\(s.bytesSent) bytes); \(s.notHeld) asked for were not held, \(s.refused) refused, \(s.questions) have questions"
            )
        }
    }
}
