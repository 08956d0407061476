import BacklotBasics
import BacklotPeerCache
import BacklotTaskScheduler

extension Agent {
    /// How often the peer cache's conditions are read again (and its advertisement follows them).
    static let peerCacheConditionsInterval = 5.0

    /// Whether the device may serve its chunks now: on mains power and an unmetered network.
    static func peerCacheAllowed(_ c: DeviceConditions) -> Bool {
        c.networkAvailable && !c.networkMetered && c.onExternalPower && !c.batteryLow
    }

    /// Starts the LAN peer cache when the configuration asks for it (``AgentConfiguration/peerCache``):
    /// what ``run()`` does first. The conditions are read every ``peerCacheConditionsInterval``
    /// seconds on a timer of their own (never on a request's thread), which switches serving and
    /// the advertisement with them. A cache that cannot start is logged, and the agent goes on
    /// without it.
    func startPeerCache() {
        guard let settings = configuration.peerCache else { return }
        let serving = ServingSwitch(Agent.peerCacheAllowed(conditions.current()))
        do {
            let server = try PeerCacheServer(
                containerPath: containerPath, settings: settings, isAllowed: { serving.isOn })
            let advertiser = settings.advertises ? PeerCacheAdvertiser(port: server.port) : nil
            state.withLock {
                $0.peerCache = server
                $0.advertiser = advertiser
            }
            log("peer cache: serving this container's chunks on \(server.endpoints.joined(separator: ", "))")
            advertisePeerCache(serving: serving.isOn)
            let timer = RepeatingTimer(label: "backlot-peer-cache-conditions", every: Agent.peerCacheConditionsInterval)
            { [self] in
                let allowed = Agent.peerCacheAllowed(conditions.current())
                if serving.set(allowed) {
                    log("peer cache: \(allowed ? "serving again" : "paused (on battery, metered or offline)")")
                }
                advertisePeerCache(serving: allowed)
            }
            state.withLock { $0.peerCacheTimer = timer }
        } catch {
            log("peer cache: not started: \(error)")
        }
    }

    /// Advertises the peer cache on the local link while it serves, and withdraws it otherwise
    /// (an `avahi-publish` that ended is started again).
    func advertisePeerCache(serving: Bool) {
        guard let advertiser = state.withLock({ $0.advertiser }) else { return }
        if serving && !isStopping {
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
            log("peer cache: advertisement withdrawn")
        }
    }

    /// Stops serving and advertising (the end of ``run()``).
    func stopPeerCache() {
        let (timer, server, advertiser) = state.withLock { s in
            defer {
                s.peerCacheTimer = nil
                s.peerCache = nil
                s.advertiser = nil
            }
            return (s.peerCacheTimer, s.peerCache, s.advertiser)
        }
        timer?.cancelAndWait()
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
