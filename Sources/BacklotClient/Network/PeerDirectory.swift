import BacklotBasics
import BacklotProtocol
import Foundation

/// The peer caches a device may ask for chunks (docs/peer-cache.md): a static list, and those
/// advertised on the local link as `_backlot._tcp` (DNS-SD over mDNS, through Avahi's
/// `avahi-browse`). Peers are untrusted: every chunk one sends is checked against the signed index.
///
/// ```swift
/// let directory = PeerDirectory(staticPeers: [URL(string: "http://192.168.1.20:7301")!], discovers: true)
/// let found = directory.peers()        // found.peers, and found.problem when discovery failed
/// ```
public struct PeerDirectory: Sendable, Hashable {
    /// Peers named by the configuration (`BacklotPeers`, `fetch --peer`): `http://HOST:PORT`.
    public var staticPeers: [URL]
    /// Whether peers advertised on the local link are looked for (`BacklotPeerDiscovery`).
    public var discovers: Bool
    /// How long discovery may take.
    public var discoveryDeadline: Duration = .seconds(3)
    /// How long a peer has to connect and start answering, in whole seconds (rounded up; at least
    /// 1): past it, or below 1 MiB/s after it, its chunks go to another source and it is not asked
    /// again during that install. A LAN peer answers in milliseconds; the default is 2 s.
    public var answerDeadline: Duration = .seconds(2)
    /// The most peers used for one install.
    public static let maximumPeers = 16

    public init(staticPeers: [URL] = [], discovers: Bool = false) {
        self.staticPeers = staticPeers
        self.discovers = discovers
    }

    /// Whether any peer may be asked.
    public var isEnabled: Bool { discovers || !staticPeers.isEmpty }

    /// What looking for peers found.
    public struct Found: Sendable, Hashable {
        public var peers: [URL]
        /// Why discovery found nothing it could use (no `avahi-browse`, no Avahi daemon), or nil.
        public var problem: String?
    }

    /// The static peers and those discovered now (at most ``maximumPeers``, each once).
    public func peers() -> Found {
        var found = Found(peers: staticPeers, problem: nil)
        if discovers {
            do {
                // One discovered peer per address: a host advertising many instances gets one place.
                var hosts = Set(staticPeers.compactMap(\.host))
                found.peers += try discover().filter { hosts.insert($0.host ?? "").inserted }
            } catch {
                found.problem = "\(error)"
            }
        }
        var seen = Set<String>()
        found.peers = Array(found.peers.filter { seen.insert($0.absoluteString).inserted }.prefix(Self.maximumPeers))
        return found
    }

    /// Browses `_backlot._tcp` on the local link with `avahi-browse`, until it has reported what
    /// the network holds now or the deadline passes.
    /// - Throws: ``BacklotError/Code/io`` when `avahi-browse` is missing or fails (no Avahi daemon).
    func discover() throws -> [URL] {
        guard let browse = ChildProcess.findExecutable("avahi-browse") else {
            throw BacklotError(
                .io, "peer discovery needs avahi-browse, which is not installed",
                hint: "install Debian's avahi-utils and avahi-daemon, or name peers with BacklotPeers")
        }
        let outcome = try ChildProcess.run(
            executable: browse,
            arguments: ["--parsable", "--resolve", "--terminate", "--no-db-lookup", PeerCacheLayout.serviceType],
            environment: ProcessInfo.processInfo.environment, until: .now + discoveryDeadline, keepingLast: 1 << 20)
        let text = String(decoding: outcome.output, as: UTF8.self)
        guard outcome.succeeded || outcome.timedOut else {
            throw BacklotError(
                .io,
                "avahi-browse failed: \(text.split(separator: "\n").last.map(String.init) ?? "exit \(outcome.exitStatus ?? -1)")",
                hint: "is avahi-daemon running? Peers can also be named with BacklotPeers")
        }
        return Self.resolvedPeers(inBrowseOutput: text)
    }

    /// The peers of `avahi-browse --parsable --resolve` output: its resolved lines
    /// (`=;IFACE;PROTO;NAME;TYPE;DOMAIN;HOST;ADDRESS;PORT;TXT`) of our service type, as
    /// `http://ADDRESS:PORT` (an IPv6 link-local address with its interface as zone). Only
    /// addresses of a LAN are taken (IPv4 10/8, 172.16/12, 192.168/16, 169.254/16; IPv6 fe80::/10,
    /// fc00::/7): anyone on the link can advertise, and a device must not be sent to loopback, a
    /// public host or any other address to hand over the list of chunks it is installing.
    public static func resolvedPeers(inBrowseOutput text: String) -> [URL] {
        var peers: [URL] = []
        for line in text.split(separator: "\n") {
            let f = line.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
            guard f.count >= 9, f[0] == "=", f[4] == PeerCacheLayout.serviceType,
                let port = CheckedInteger.parse(f[8], as: UInt16.self), port > 0
            else { continue }
            let address = f[7]
            let host: String
            if f[2] == "IPv4" {
                let octets = address.split(separator: ".", omittingEmptySubsequences: false)
                // (Not a cloud machine's metadata service, on the link-local range of every cloud VM.)
                guard octets.count == 4, octets.allSatisfy({ CheckedInteger.parse(String($0), as: UInt8.self) != nil }),
                    NetworkInterfaces.isPrivate(ipv4: address), address != "169.254.169.254"
                else { continue }
                host = address
            } else if f[2] == "IPv6" {
                guard !address.isEmpty, address.allSatisfy({ $0.isHexDigit || $0 == ":" }),
                    NetworkInterfaces.isPrivate(ipv6: address)
                else { continue }
                let zone =
                    f[1].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." }) ? f[1] : ""
                host =
                    "[" + address + (address.lowercased().hasPrefix("fe80") && !zone.isEmpty ? "%25" + zone : "") + "]"
            } else {
                continue
            }
            if let url = URL(string: "http://\(host):\(port)") { peers.append(url) }
        }
        return peers
    }
}
