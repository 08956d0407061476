import BacklotBasics
import BacklotCrypto
import BacklotHTTPClient
import BacklotRepository
import Foundation

/// Fetches and trusts a catalog: signature by a pinned key (following key rotations published
/// under `v1/keys/`), the expected app and channel, not expired, and never older than one already
/// seen by this container (which would be a rollback attack).
struct CatalogClient: Sendable {
    let catalogURL: URL
    let app: String
    let channel: Channel
    let pinned: [Ed25519.PublicKey]
    let http: HTTPClient
    let container: ClientContainer

    /// The trusted keys: the pinned ones, or those of a later key list this container accepted.
    func trustedKeys() throws -> KeyList {
        if let text = try container.meta("keyList"), let bytes = Data(base64Encoded: text),
           let list = try? KeyList.decode(Array(bytes), source: "container key list") {
            return list
        }
        return KeyList(version: 1, keys: pinned)
    }

    func fetch(now: Date = Date()) throws -> Catalog {
        let response = try http.send("GET", catalogURL.absoluteString)
        guard response.status == 200 else {
            throw BacklotError(.io, "the catalog answered \(response.status)", context: catalogURL.absoluteString,
                               hint: response.status == 404 ? "nothing is released on this channel yet, or the URL is wrong" : nil)
        }
        let lastSeen = try container.meta("catalogVersion").flatMap(UInt64.init)
        var keys = try trustedKeys()
        do {
            return try remember(Catalog.verify(response.body, trusting: keys.keys, app: app, channel: channel, now: now, newerThan: lastSeen,
                                               source: catalogURL.absoluteString), envelope: response.body, keys: keys.keys)
        } catch let e as BacklotError where e.code == .untrusted && e.message.contains("no valid signature") {
            // Perhaps the repository rotated its key: follow the signed chain of key lists.
            let before = keys.version
            keys = try KeyList.follow(from: keys) { n in
                let url = URL(string: "../../../keys/root-\(n).json", relativeTo: catalogURL)!.absoluteURL
                let r = try http.send("GET", url.absoluteString)
                return r.status == 200 ? r.body : nil
            }
            guard keys.version > before else { throw e }
            let catalog = try Catalog.verify(response.body, trusting: keys.keys, app: app, channel: channel, now: now, newerThan: lastSeen,
                                             source: catalogURL.absoluteString)
            try container.setMeta("keyList", Data(keys.payload).base64EncodedString())
            return try remember(catalog, envelope: response.body, keys: keys.keys)
        }
    }

    /// Keeps the version (against rollbacks) and the verified envelope with the keys that verified
    /// it, so that offline tools (an App Clip handoff) can check it again later.
    private func remember(_ catalog: Catalog, envelope: [UInt8], keys: [Ed25519.PublicKey]) throws -> Catalog {
        try container.setMeta("catalogVersion", String(catalog.version))
        try container.setMeta("catalogEnvelope", Data(envelope).base64EncodedString())
        try container.setMeta("catalogKeys", keys.map { Data($0.rawRepresentation).base64EncodedString() }.joined(separator: ","))
        try container.setMeta("catalogFor", catalog.app + "\n" + catalog.channel.rawValue)
        return catalog
    }

    /// An archive URL from the catalog, resolved against it; refused if it leaves the catalog's host.
    func archiveURL(_ release: Catalog.Release) throws -> URL {
        guard let url = URL(string: release.archiveURL, relativeTo: catalogURL)?.absoluteURL,
              url.scheme == catalogURL.scheme, url.host == catalogURL.host, url.port == catalogURL.port else {
            throw BacklotError(.untrusted, "the archive URL \(release.archiveURL) leaves the catalog's server", context: catalogURL.absoluteString)
        }
        return url
    }
}
