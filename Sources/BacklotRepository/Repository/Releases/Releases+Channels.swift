import BacklotBasics
import BacklotProtocol
import BacklotStore
import Foundation

/// What each channel serves (`channel_packs`), as the API reports it and as the other services read it.
extension Releases {
    /// What a channel publishes, from the record (``ChannelState``). - Throws: `notFound` for an unknown app.
    public func channelState(app: String, channel: Channel) throws -> ChannelState {
        let key = try directory.signingKey().publicKey.keyID
        return try db.transaction { tx in
            try Apps.requireApp(&tx, app)
            let catalog = try Publication.recordedCatalog(&tx, app: app, channel: channel)
            let rows = try tx.query(
                """
                SELECT pack, live, candidate, rollout_bp AS bp FROM channel_packs
                WHERE app = ? AND channel = ? AND live IS NOT NULL ORDER BY pack
                """, [.text(app), .text(channel.rawValue)])
            func live(_ r: Database.Row) -> Uploads.VersionKey? {
                guard let pack = r["pack"]?.string, let live = r["live"]?.integer(as: Int.self) else { return nil }
                return Uploads.VersionKey(pack: pack, number: live)
            }
            let facts = try Uploads.facts(&tx, app: app, of: rows.compactMap(live))
            let packs = rows.compactMap { r -> ChannelState.Pack? in
                guard let pack = r["pack"]?.string else { return nil }
                let candidate = r["candidate"]?.integer(as: Int.self)
                return ChannelState.Pack(
                    pack: pack, liveVersion: r["live"]?.integer(as: Int.self),
                    liveArchiveSHA256: live(r).flatMap { facts[$0]?.archiveSHA256 }, candidateVersion: candidate,
                    candidatePercent: candidate == nil ? nil : Double(r["bp"]?.int ?? 0) / 100)
            }
            return ChannelState(
                app: app, channel: channel, catalogVersion: catalog?["version"]?.integer(as: UInt64.self),
                expires: catalog?["expires"]?.int.map { Date(timeIntervalSince1970: Double($0)) }, signingKey: key,
                packs: packs)
        }
    }

    /// A pack a channel's catalog lists: its live version and that version's format, its
    /// candidate and the candidate's share.
    struct CatalogRow {
        let pack: String
        let live: Int
        let format: String
        let candidate: Int?
        let rolloutBasisPoints: Int
    }

    /// The packs a channel's catalog lists, by pack: those with a live version that exists.
    static func catalogRows(
        _ tx: inout any MetadataConnection, app: String, channel: Channel
    ) throws -> [CatalogRow] {
        let rows = try tx.query(
            "SELECT pack, live, candidate, rollout_bp FROM channel_packs WHERE app = ? AND channel = ? AND live IS NOT NULL ORDER BY pack",
            [.text(app), .text(channel.rawValue)])
        let listed = rows.compactMap { r -> (row: Database.Row, key: Uploads.VersionKey)? in
            guard let pack = r["pack"]?.string, let live = r["live"]?.integer(as: Int.self) else { return nil }
            return (r, Uploads.VersionKey(pack: pack, number: live))
        }
        let facts = try Uploads.facts(&tx, app: app, of: listed.map(\.key))
        return listed.compactMap { r, key in
            guard let live = facts[key] else { return nil }
            return CatalogRow(
                pack: key.pack, live: key.number, format: live.format, candidate: r["candidate"]?.integer(as: Int.self),
                rolloutBasisPoints: r["rollout_bp"]?.integer(as: Int.self) ?? 0)
        }
    }

    /// The archives (SHA-256 hex) a channel's catalog names: each pack's live version and candidate.
    static func channelArchives(
        _ tx: inout any MetadataConnection, app: String, channel: Channel
    ) throws -> [String] {
        var keys: [Uploads.VersionKey] = []
        for r in try tx.query(
            "SELECT pack, live, candidate FROM channel_packs WHERE app = ? AND channel = ?",
            [.text(app), .text(channel.rawValue)])
        {
            guard let pack = r["pack"]?.string else { continue }
            for column in ["live", "candidate"] {
                if let n = r[column]?.integer(as: Int.self) { keys.append(Uploads.VersionKey(pack: pack, number: n)) }
            }
        }
        let facts = try Uploads.facts(&tx, app: app, of: keys).values
        return Set(facts.filter { $0.format == ArchiveFormat.pack.rawValue }.compactMap(\.archiveSHA256)).sorted()
    }

    /// The version live on a channel (`app`, `pack`, and the live version as `number`), nil when
    /// the pack is not on the channel.
    /// Every pack on production: its live version, its candidate and the candidate's share in
    /// basis points (what `/metrics` shows of rollouts).
    public func productionPacks() throws -> [(app: String, pack: String, live: Int?, candidate: Int?, basisPoints: Int)]
    {
        try db.transaction { tx in
            try tx.query(
                "SELECT app, pack, live, candidate, rollout_bp FROM channel_packs WHERE channel = 'production' ORDER BY app, pack",
                [])
        }.compactMap { r in
            guard let app = r["app"]?.string, let pack = r["pack"]?.string else { return nil }
            return (
                app, pack, r["live"]?.integer(as: Int.self), r["candidate"]?.integer(as: Int.self),
                r["rollout_bp"]?.integer(as: Int.self) ?? 0
            )
        }
    }

    static func liveVersion(
        _ tx: inout any MetadataConnection, app: String, channel: String, pack: String
    ) throws -> Database.Row? {
        try tx.query(
            "SELECT app, pack, live AS number FROM channel_packs WHERE app = ? AND channel = ? AND pack = ? AND live IS NOT NULL",
            [.text(app), .text(channel), .text(pack)]
        ).first
    }

    /// Every (app, channel) with a live release, in order.
    static func releasedChannels(_ tx: inout any MetadataConnection) throws -> [(app: String, channel: String)] {
        try tx.query("SELECT DISTINCT app, channel FROM channel_packs WHERE live IS NOT NULL ORDER BY app, channel")
            .compactMap { r in r["app"]?.string.flatMap { app in r["channel"]?.string.map { (app, $0) } } }
    }

    /// A channel whose live version or candidate is version `number` of the pack, nil when none.
    static func channelUsing(
        _ tx: inout any MetadataConnection, app: String, pack: String, number: Int
    ) throws -> String? {
        try tx.query(
            "SELECT channel FROM channel_packs WHERE app = ? AND pack = ? AND (live = ? OR candidate = ?)",
            [.text(app), .text(pack), .integer(Int64(number)), .integer(Int64(number))]
        ).first?["channel"]?.string
    }
}
