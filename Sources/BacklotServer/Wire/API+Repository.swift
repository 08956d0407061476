import BacklotBasics
import BacklotProtocol
import BacklotRepository
import Foundation

// The repository's records as the management API sends them: the only place the server maps its
// model onto the wire types of ``API`` (whose member names are the wire's).

extension API.App {
    init(_ app: AppInfo) {
        self.init(
            id: app.id, created: RFC3339.string(app.created), fourEyes: app.fourEyes, quotaBytes: app.quotaBytes,
            secondReviewerAbove: app.secondReviewerAbove)
    }
}

extension API.Pack {
    init(_ pack: PackInfo) {
        self.init(id: pack.id, created: RFC3339.string(pack.created), versions: pack.versions, latest: pack.latest)
    }
}

extension API.Version {
    init(_ v: VersionInfo) {
        self.init(
            app: v.app, pack: v.pack, version: v.number, state: v.state, reason: v.reason, size: v.declaredSize,
            received: v.received, archiveSHA256: v.archiveSHA256, installSize: v.installSize, format: v.format,
            notes: v.notes)
        variants = v.variants.map {
            API.Variants(
                textureFormats: $0.textureFormats, defaultTextureFormat: $0.defaultTextureFormat,
                deviceTiers: $0.deviceTiers)
        }
    }
}

extension API.TokenReference {
    init(_ t: TokenReference) { self.init(id: t.id, label: t.label, person: t.person) }
}

extension API.ReleaseRequest {
    init(_ r: ReleaseRequest) {
        self.init(
            id: r.id, app: r.app, channel: r.channel, pack: r.pack, version: r.version,
            rolloutPercent: r.rolloutPercent, status: r.status, requested: RFC3339.string(r.requested),
            requestedBy: r.requestedBy.map(API.TokenReference.init), decided: r.decided.map(RFC3339.string),
            decidedBy: r.decidedBy.map(API.TokenReference.init), reason: r.reason, notes: r.notes)
    }
}

extension API.ReleasePlan {
    init(_ p: ReleasePlan) {
        self.init(
            needsApproval: p.needsApproval,
            change: Change(
                channel: p.channel, pack: p.pack, from: Side(version: p.fromVersion, rolloutPercent: p.fromPercent),
                to: Side(version: p.toVersion, rolloutPercent: p.toPercent), catalogVersion: p.catalogVersion))
    }
}

extension API.ChannelPack {
    /// `pack` on a channel, from its record (nil: not on the channel).
    init(_ p: ChannelState.Pack?, pack: String) {
        self.init(
            pack: pack,
            live: p?.liveVersion.map { API.Live(version: $0, archiveSHA256: p?.liveArchiveSHA256) },
            candidate: p?.candidateVersion.map { API.Candidate(version: $0, rolloutPercent: p?.candidatePercent ?? 0) })
    }
}

extension API.ChannelState {
    init(_ s: ChannelState) {
        self.init(
            app: s.app, channel: s.channel, catalogVersion: s.catalogVersion, expires: s.expires.map(RFC3339.string),
            signingKey: s.signingKey, packs: s.packs.map { API.ChannelPack($0, pack: $0.pack) })
    }
}

extension API.Token {
    init(_ t: TokenInfo) {
        self.init(
            id: t.id, label: t.label, role: t.role, person: t.person, created: RFC3339.string(t.created),
            lastUsed: t.lastUsed.map(RFC3339.string), expires: t.expires.map(RFC3339.string),
            revoked: t.revoked.map(RFC3339.string))
    }
}

extension API.IssuedToken {
    init(_ t: IssuedToken) {
        self.init(
            id: t.id, token: t.token, role: t.role, label: t.label, person: t.person,
            created: RFC3339.string(t.created),
            expires: t.expires.map(RFC3339.string))
    }
}

extension API.AuditEntry {
    init(_ e: AuditEntry) {
        self.init(
            id: e.id, time: RFC3339.string(e.time),
            actor: Actor(tokenId: e.tokenID, label: e.actorLabel, role: e.actorRole, person: e.actorPerson), app: e.app,
            pack: e.pack,
            version: e.version, action: e.action, details: e.details)
    }
}

extension API.DownloadRow {
    init(_ c: DownloadCount) {
        self.init(
            date: c.date, pack: c.pack, version: c.version, kind: c.kind, requests: c.requests, bytes: c.bytes)
    }
}

extension API.SigningKey {
    init(_ k: SigningKeyInfo) {
        self.init(
            keyId: k.keyID, publicKey: k.publicKey, since: RFC3339.string(k.since),
            retired: k.retired.map(RFC3339.string))
    }
}

extension API.PhasedRollout {
    init(_ p: PhasedRolloutInfo) {
        self.init(
            app: p.app, pack: p.pack, version: p.version,
            steps: p.steps.map { API.RolloutShare(percent: Double($0) / 100) }, stepSeconds: p.stepSeconds,
            step: p.step, stepSince: RFC3339.string(p.stepSince), state: p.state, reason: p.reason, setBy: p.setBy)
    }
}

extension API.AdoptionRow {
    init(_ r: AdoptionReport.Row) {
        self.init(
            date: r.date, channel: r.channel, pack: r.pack, version: r.version, devices: r.devices,
            started: r.started, finished: r.finished, failed: r.failed)
    }
}

extension API.Adoption {
    init(_ r: AdoptionReport) {
        self.init(
            app: r.app, from: r.from, to: r.to, threshold: r.threshold, rows: r.rows.map(API.AdoptionRow.init))
    }
}

extension DeviceReport {
    /// A device's report as the API reads it.
    init(_ r: API.DeviceReport) {
        func releases(_ list: [API.HeldRelease]?) -> [Release]? {
            list?.map { Release(pack: $0.pack, version: $0.version) }
        }
        self.init(
            channel: r.channel, held: releases(r.held), earlierToday: releases(r.earlierToday),
            installs: r.installs?.map {
                Installs(
                    pack: $0.pack, version: $0.version, started: $0.started, finished: $0.finished, failed: $0.failed)
            })
    }
}
