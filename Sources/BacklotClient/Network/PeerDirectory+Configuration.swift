import BacklotBasics
import BacklotInfoPlist
import Foundation

extension PeerDirectory {
    /// The configuration keys that name peers.
    public static let configurationKeys = ["BacklotPeers", "BacklotPeerDiscovery"]

    /// The peers a configuration names: `BacklotPeers`, an array of `http://HOST:PORT` (the
    /// peer caches of a network without multicast), and `BacklotPeerDiscovery`, true to look for
    /// peers on the local link. Neither: no peer is asked.
    ///
    /// ```swift
    /// let peers = try PeerDirectory(settings: ["BacklotPeers": .array([.string("http://10.0.0.2:7301")])], source: "app.json")
    /// ```
    /// - Throws: ``BacklotError/Code/invalidInput`` naming the key and the element that is wrong.
    public init(settings: [String: PlistValue], source: String) throws {
        self.init()
        if let value = settings["BacklotPeerDiscovery"] {
            guard case .bool(let on) = value else {
                throw BacklotError(
                    .invalidInput, "the key BacklotPeerDiscovery must be true or false, not \(value.typeName)",
                    context: source)
            }
            discovers = on
        }
        guard let value = settings["BacklotPeers"] else { return }
        let rule = "an array of at most \(Self.maximumPeers) peer caches, each http://HOST:PORT"
        guard let elements = value.array, elements.count <= Self.maximumPeers else {
            throw BacklotError(.invalidInput, "the key BacklotPeers must be \(rule)", context: source)
        }
        staticPeers = try elements.enumerated().map { i, element in
            guard let text = element.string, let url = Self.peerURL(text) else {
                throw BacklotError(
                    .invalidInput,
                    "the key BacklotPeers: element \(i) (\(element.string.map { "\"\($0.prefix(80))\"" } ?? element.typeName)) is not http://HOST:PORT",
                    context: source, hint: "the key must be \(rule); docs/peer-cache.md")
            }
            return url
        }
    }

    /// `text` as a peer's base URL: `http://HOST:PORT` with nothing after (a trailing `/` allowed);
    /// nil for anything else (another scheme, a path, a query, user information, no port).
    public static func peerURL(_ text: String) -> URL? {
        guard let c = URLComponents(string: text), c.scheme == "http", let host = c.host, !host.isEmpty,
            let port = c.port, (1...65_535).contains(port), c.path.isEmpty || c.path == "/", c.query == nil,
            c.fragment == nil, c.user == nil, c.password == nil
        else { return nil }
        var base = text
        while base.hasSuffix("/") { base.removeLast() }
        return URL(string: base)
    }
}
