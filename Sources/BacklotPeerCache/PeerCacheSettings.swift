import BacklotBasics
import BacklotInfoPlist
import BacklotProtocol

/// How a device serves its chunks to the local network (docs/peer-cache.md), from the
/// configuration's `BacklotPeerCache…` keys or `backlot agent --peer-cache`.
///
/// ```swift
/// let settings = try PeerCacheSettings(settings: ["BacklotPeerCache": .bool(true)], source: "agent.json")
/// ```
public struct PeerCacheSettings: Sendable, Hashable {
    /// Addresses (IPv4) or interface names to listen on; empty: the private addresses of the
    /// interfaces that are up (never a public one unless named).
    public var listen: [String] = []
    public var port: UInt16 = PeerCacheLayout.defaultPort
    /// Bytes per second sent at most, over every connection.
    public var rate: UInt64 = 20 << 20
    /// Connections held at most, in all.
    public var connections = 32
    /// Whether the cache advertises itself on the local link (`_backlot._tcp`, `avahi-publish`).
    public var advertises = true

    /// The configuration keys of the peer cache.
    public static let configurationKeys = [
        "BacklotPeerCache", "BacklotPeerCacheListen", "BacklotPeerCachePort", "BacklotPeerCacheRate",
        "BacklotPeerCacheConnections", "BacklotPeerCacheAdvertises",
    ]

    public init() {}

    /// The settings a configuration gives; nil unless `BacklotPeerCache` is true.
    /// - Throws: ``BacklotError/Code/invalidInput`` naming the key that is wrong.
    public init?(settings: [String: PlistValue], source: String) throws {
        func fail(_ key: String, _ rule: String, _ value: PlistValue) -> BacklotError {
            BacklotError(
                .invalidInput, "the key \(key) must be \(rule), not \(value.typeName)", context: source,
                hint: "docs/peer-cache.md lists the peer cache's keys")
        }
        func integer(_ key: String, _ range: ClosedRange<Int64>, _ rule: String) throws -> Int64? {
            guard let value = settings[key] else { return nil }
            guard case .integer(let n) = value, range.contains(n) else { throw fail(key, rule, value) }
            return n
        }
        if let value = settings["BacklotPeerCache"] {
            guard case .bool(let on) = value else { throw fail("BacklotPeerCache", "true or false", value) }
            guard on else { return nil }
        } else {
            return nil
        }
        self.init()
        if let value = settings["BacklotPeerCacheAdvertises"] {
            guard case .bool(let on) = value else { throw fail("BacklotPeerCacheAdvertises", "true or false", value) }
            advertises = on
        }
        if let value = settings["BacklotPeerCacheListen"] {
            guard let list = value.array, !list.isEmpty, list.count <= 16,
                let names = Optional(list.compactMap(\.string)), names.count == list.count
            else {
                throw fail("BacklotPeerCacheListen", "an array of 1 to 16 IPv4 addresses or interface names", value)
            }
            listen = names
        }
        if let n = try integer("BacklotPeerCachePort", 1...65_535, "a port number, 1 to 65535") {
            port = UInt16(n)
        }
        if let n = try integer("BacklotPeerCacheRate", 65_536...(1 << 40), "bytes per second, at least 65536") {
            rate = UInt64(n)
        }
        if let n = try integer("BacklotPeerCacheConnections", 1...4096, "a number of connections, 1 to 4096") {
            connections = Int(n)
        }
    }

    /// The addresses to listen on: each of ``listen`` (an address as it is, an interface name as
    /// its IPv4 addresses), or the private addresses of the interfaces that are up.
    /// - Throws: ``BacklotError/Code/invalidInput`` for a name that is neither an address nor an
    ///   interface with one; ``BacklotError/Code/io`` when no private address is up.
    public func addresses(
        interfaces: [NetworkInterfaces.Address] = NetworkInterfaces.ipv4Addresses()
    ) throws -> [String] {
        if listen.isEmpty {
            let found = interfaces.filter { $0.isUp && !$0.isLoopback && $0.isPrivate }.map(\.address)
            guard !found.isEmpty else {
                throw BacklotError(
                    .io, "the peer cache found no private IPv4 address on an interface that is up",
                    hint: "name the addresses or interfaces to serve on with BacklotPeerCacheListen")
            }
            return Array(Set(found)).sorted()
        }
        var out: [String] = []
        for name in listen {
            let octets = name.split(separator: ".", omittingEmptySubsequences: false)
            if octets.count == 4, octets.allSatisfy({ CheckedInteger.parse(String($0), as: UInt8.self) != nil }) {
                out.append(name)
                continue
            }
            let own = interfaces.filter { $0.interface == name }.map(\.address)
            guard !own.isEmpty else {
                throw BacklotError(
                    .invalidInput,
                    "BacklotPeerCacheListen names \(name), which is neither an IPv4 address nor an interface with one",
                    hint: "interfaces here: \(Set(interfaces.map(\.interface)).sorted().joined(separator: ", "))")
            }
            out += own
        }
        return Array(Set(out)).sorted()
    }
}
