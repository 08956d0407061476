import BacklotBasics
import BacklotContainer
import BacklotCrypto
import BacklotHTTPClient
import BacklotProtocol
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

    /// The most a catalog envelope may be (a catalog of thousands of packs is well under it);
    /// with the client's minimum rate it bounds how long a catalog request may take.
    static let maximumCatalogBytes = 16 << 20
    /// The most a key list may be.
    static let maximumKeyListBytes = 1 << 20

    /// The key list this container accepted after a rotation, if any.
    func storedKeys() throws -> KeyList? {
        guard let text = try container.meta(.keyList), let bytes = Data(base64Encoded: text) else { return nil }
        return try? KeyList.decode(Array(bytes), source: "container key list")
    }

    /// A catalog check: the verified catalog, and the seconds its answer asked the device to wait
    /// before the next check (``PublishedTreeLayout/checkAfterHeader``, at most
    /// ``PublishedTreeLayout/longestCheckAfter``; nil without one).
    /// - Throws: ``BacklotError/Code/unavailable`` with ``BacklotError/retryAfter`` for a 503 or
    ///   429 (the server sheds load: the device tries again after that many seconds, at most an
    ///   hour); ``BacklotError/Code/io`` for any other status; ``BacklotError/Code/untrusted`` or
    ///   ``BacklotError/Code/staleCatalog`` for a catalog that fails verification or is older
    ///   than one already seen.
    func check(now: Date = Date()) throws -> (catalog: Catalog, checkAfter: Int?) {
        let response = try http.send("GET", catalogURL.absoluteString, bodyLimit: Self.maximumCatalogBytes)
        if response.status == 503 || response.status == 429 {
            let after = response.headers["retry-after"].flatMap { CheckedInteger.parse($0, as: Int.self) }
            throw BacklotError(
                .unavailable, "the catalog answered \(response.status): the server is busy",
                context: catalogURL.absoluteString, hint: "the device checks again later",
                retryAfter: after.map { min(max(0, $0), 3600) })
        }
        guard response.status == 200 else {
            throw BacklotError(
                .io, "the catalog answered \(response.status)", context: catalogURL.absoluteString,
                hint: response.status == 404 ? "nothing is released on this channel yet, or the URL is wrong" : nil)
        }
        let lastSeen = try container.meta(.catalogVersion).flatMap { CheckedInteger.parse($0, as: UInt64.self) }
        let keys = try currentKeys()
        let catalog = try remember(
            verify(response.body, keys: keys, lastSeen: lastSeen, now: now), envelope: response.body, keys: keys)
        let hint = response.headers[PublishedTreeLayout.checkAfterHeader.lowercased()].flatMap {
            CheckedInteger.parse($0, as: Int.self)
        }
        return (catalog, hint.map { min(max(0, $0), PublishedTreeLayout.longestCheckAfter) })
    }

    /// The keys to trust now, after looking for a rotation, as a TUF client updates its root
    /// first: from the key list this container accepted last, or else from where the pinned key
    /// entered the chain (an app may pin the key of any rotation: the one current when it was
    /// built), the chain is followed to the newest list (one request, a 404, when nothing
    /// changed), which is kept. So a key rotated away stops being trusted at the next check.
    /// Without any published list that names the pinned key, the pinned keys are trusted as they are.
    func currentKeys() throws -> [Ed25519.PublicKey] {
        let list: (PublishedTreeLayout) throws -> [UInt8]? = { file in
            let url = URL(string: file.path, relativeTo: baseURL)!.absoluteURL
            let r = try http.send("GET", url.absoluteString, bodyLimit: Self.maximumKeyListBytes)
            return r.status == 200 ? r.body : nil
        }
        let stored = try storedKeys()
        guard
            let start = try stored
                ?? KeyList.anchor(
                    pinned: pinned, current: { try list(.currentKeyList) }, fetch: { try list(.keyList(version: $0)) })
        else {
            return pinned
        }
        let newest = try KeyList.follow(from: start, fetch: { try list(.keyList(version: $0)) })
        if newest != stored { try container.setMeta(.keyList, Data(newest.payload).base64EncodedString()) }
        return newest.keys
    }

    /// ``Catalog/verify(_:trusting:app:channel:now:newerThan:source:)``, with an older catalog than
    /// one already seen told apart from an attack: a CDN edge may still serve its old copy, so it
    /// is reported as stale (the installed release is kept, the check is tried again later), and
    /// nothing is installed from it.
    private func verify(_ envelope: [UInt8], keys: [Ed25519.PublicKey], lastSeen: UInt64?, now: Date) throws -> Catalog
    {
        let catalog = try Catalog.verify(
            envelope, trusting: keys, app: app, channel: channel, now: now, source: catalogURL.absoluteString)
        if let lastSeen, catalog.version < lastSeen {
            throw BacklotError(
                .staleCatalog,
                "the server's catalog is older than one already seen (version \(catalog.version) < \(lastSeen)); keeping version \(lastSeen)",
                context: catalogURL.absoluteString,
                hint:
                    "a CDN edge may still serve an old copy; the installed release stays, and the check is tried again later"
            )
        }
        return catalog
    }

    /// Keeps the version (against rollbacks) and the verified envelope with the keys that verified
    /// it, so that offline tools (an App Clip handoff) can check it again later.
    private func remember(_ catalog: Catalog, envelope: [UInt8], keys: [Ed25519.PublicKey]) throws -> Catalog {
        try container.setMeta(.catalogVersion, String(catalog.version))
        try container.setMeta(.catalogEnvelope, Data(envelope).base64EncodedString())
        try container.setMeta(
            .catalogKeys, keys.map { Data($0.rawRepresentation).base64EncodedString() }.joined(separator: ","))
        try container.setMeta(.catalogFor, catalog.app + "\n" + catalog.channel.rawValue)
        return catalog
    }

    /// The repository's base URL: the folder that holds the catalog's tree (``PublishedTreeLayout``),
    /// always ending in `/`.
    var baseURL: URL { URL(string: PublishedTreeLayout.baseFromCatalog, relativeTo: catalogURL)!.absoluteURL }

    /// An archive URL from the catalog, resolved against it (RFC 3986); refused unless it stays
    /// on the catalog's scheme, host and port and inside the repository's base path (compared as
    /// bytes, whole components), with no user name, no fragment and no percent-encoded `.`, `/`
    /// or `\` that a server could decode into another path.
    func archiveURL(_ release: Catalog.Release) throws -> URL {
        let refuse = { (why: String) in
            BacklotError(
                .untrusted, "the archive URL \(release.archiveURL) \(why)", context: catalogURL.absoluteString,
                hint: "the catalog is signed but names an archive outside its repository: the publisher must fix it")
        }
        let lowered = release.archiveURL.lowercased()
        guard !["%2e", "%2f", "%5c", "%25", "\\", ";"].contains(where: { lowered.contains($0) }) else {
            throw refuse("hides a path separator, a dot, a parameter or an escape in an escape")
        }
        guard let url = URL(string: release.archiveURL, relativeTo: catalogURL)?.absoluteURL else {
            throw refuse("is not a URL")
        }
        guard url.scheme == catalogURL.scheme, url.host == catalogURL.host, url.port == catalogURL.port,
            url.user == nil, url.password == nil,
            url.fragment == nil, url.query == nil
        else {
            throw refuse("leaves the catalog's server")
        }
        let base =
            (baseURL.path.hasSuffix("/") ? baseURL.path : baseURL.path + "/") + PublishedTreeLayout.packsFolder + "/"
        guard url.path.utf8.starts(with: base.utf8),
            BytePath.isSafeRelative(String(decoding: url.path.utf8.dropFirst(base.utf8.count), as: UTF8.self))
        else {
            throw refuse("resolves outside the repository's archives (\(base))")
        }
        return url
    }

    /// A delta's URL (docs/protocol.md §3): accepted only in exactly the form the repository writes
    /// (``PublishedTreeLayout/referenceFromCatalog``: a delta named by 64 lower-case hex digits), and
    /// resolved in the tree of the archive's folder (`BASE/v1/deltas/`, where `BASE/v1/packs/` holds
    /// the archive), so it cannot leave the repository whatever it says. Nil for any other form (the
    /// delta is then not used).
    static func deltaURL(_ delta: Catalog.Delta, archiveURL: URL) -> URL? {
        guard let file = PublishedTreeLayout(referenceFromCatalog: delta.url), case .delta = file else { return nil }
        return URL(string: PublishedTreeLayout.rootFromPack + file.path, relativeTo: archiveURL)?.absoluteURL
    }
}
