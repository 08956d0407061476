import BacklotBasics
import BacklotCrypto
import BacklotFormat
import BacklotProtocol
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Phase 1 of an install: what the release is, checked against the catalog before anything is
/// written.
struct InstallPlan {
    /// The archive's URL, as errors name it.
    let url: String
    /// The release's name (``ReleaseName``: its index SHA-256 in hex, and the variant chosen): the
    /// name of its folder and of its progress records.
    let digest: String
    let header: PackHeader
    let index: PackIndex
    /// The file that holds the header and index bytes the container keeps, for updates and
    /// repairs, until the commit records them (``ClientContainer/pendingIndexFile(_:digest:)``).
    let storedIndexFile: String
    /// The delta from the installed release that the catalog offers, when it could be read.
    let delta: DeltaPlan?
    /// Bytes read from the archive for the header and the index (the delta's prefix is counted
    /// with the delta's bytes).
    let downloadedBytes: UInt64
}

extension PackInstaller {
    /// Phase 1: the archive's header and index, from the archive by Range or rebuilt from a delta's
    /// prefix when the catalog offers a delta from `previous`, and checked against the catalog:
    /// the header's index position and SHA-256, the index's SHA-256, its pack ID and install size.
    /// - Parameter previous: the installed release a delta may start from (nil when repairing).
    /// - Throws: ``BacklotError/Code/untrusted`` for an archive that is not what the catalog
    ///   names; what the transfer throws.
    func verifiedRelease(
        id: String, release: Catalog.Release, archiveURL: URL, previous: ClientContainer.Installed?
    ) throws -> InstallPlan {
        let url = archiveURL.absoluteString
        var downloaded: UInt64 = 0
        // The files this device installs: the shared ones and its variant's (docs/format.md §3.2).
        let choice = ReleaseName.choice(release, profile: profile)
        let digest = ReleaseName.make(indexDigest: release.indexSHA256.hex, choice: choice)
        // What the container keeps waits on disk, not in memory: 12 MB at 200,000 files, held
        // through the whole install, was a tenth of its peak.
        let storedIndexFile = container.pendingIndexFile(id, digest: digest)
        // A delta from the installed release, when the catalog offers one: its prefix, and the
        // index rebuilt from it (checked as the archive's would be) — or the one an earlier attempt
        // kept, which spares a restart the early frames. Any failure: no delta, but what was read
        // of it is downloaded all the same.
        var delta: DeltaPlan? = nil
        if let previous {
            let attempt = deltaPlan(
                id: id, release: release, previous: previous, archiveURL: archiveURL, keptIndexFile: storedIndexFile)
            delta = attempt.plan
            if delta == nil { downloaded += UInt64(attempt.read) }
        }

        let headBytes: [UInt8]
        if let rebuilt = delta?.index, let version = PackIndex.formatVersion(ofIndex: rebuilt),
            PackHeader.formatVersions.contains(version)
        {
            headBytes =
                PackHeader(
                    formatVersion: version, indexOffset: release.indexOffset, indexLength: release.indexLength,
                    indexDigest: release.indexSHA256
                ).encoded
        } else {
            headBytes = try rangeWithRetries(url, 0, UInt64(PackHeader.size) - 1)
            downloaded += UInt64(headBytes.count)
        }
        let header = try PackHeader.decode(headBytes, fileSize: release.archiveSize, source: url)
        guard header.indexDigest == release.indexSHA256, header.indexOffset == release.indexOffset,
            header.indexLength == release.indexLength
        else {
            throw BacklotError(
                .untrusted,
                "the archive's header does not match the catalog (index \(header.indexDigest.short)… at \(header.indexOffset))",
                context: url, hint: "the server mixes archives and catalogs; try again later")
        }
        let indexBytes: [UInt8]
        if let rebuilt = delta?.index {
            indexBytes = rebuilt
        } else {
            indexBytes = try rangeWithRetries(url, header.indexOffset, header.indexOffset + header.indexLength - 1)
            downloaded += UInt64(indexBytes.count)
        }
        guard SHA256.hash(indexBytes) == release.indexSHA256 else {
            throw BacklotError(
                .untrusted, "the archive's index does not have the SHA-256 the catalog names", context: url)
        }
        let whole = try PackIndex.decode(indexBytes, header: header, source: url)
        guard whole.metadata.assetPackID.rawValue == id else {
            throw BacklotError(
                .untrusted, "the archive is the pack \(whole.metadata.assetPackID), not \(id)", context: url)
        }
        guard whole.installSize == release.installSize, whole.metadata.variants == release.variants else {
            throw BacklotError(
                .untrusted,
                whole.installSize == release.installSize
                    ? "the catalog lists other variants of \(id) than its index"
                    : "the catalog says \(id) installs \(release.installSize) bytes, but its index holds \(whole.installSize)",
                context: url,
                hint: "the catalog and the archive disagree: the publisher must fix the release")
        }
        let index = try whole.selecting(choice, source: url)
        // The delta's table names chunks by their number in the whole indexes (version 2): resolved
        // now, checked; a table that does not resolve means no delta, the index being already checked.
        let resolved = previous.flatMap { p in delta?.resolved(previous: p, target: whole) }
        // What was read of a delta that does not resolve is still downloaded.
        if resolved == nil, let delta { downloaded += UInt64(delta.prefixBytes) }
        try FileSystem.makeDirectories(container.packFolder(id))
        try Self.writeStoredIndex(header: headBytes, index: indexBytes, to: storedIndexFile)
        return InstallPlan(
            url: url, digest: digest, header: header, index: index, storedIndexFile: storedIndexFile, delta: resolved,
            downloadedBytes: downloaded)
    }

    /// The index an earlier attempt at this release kept in `path` (``writeStoredIndex(header:index:to:)``),
    /// when it still has the catalog's length and SHA-256; nil otherwise.
    static func keptIndex(_ path: String, release: Catalog.Release) -> [UInt8]? {
        guard release.indexLength <= PackHeader.maximumIndexLength,
            let fd = try? FileDescriptor.openForReading(path)
        else { return nil }
        defer { fd.close() }
        guard let size = try? fd.size(), size == UInt64(PackHeader.size) + release.indexLength,
            let bytes = try? fd.read(count: Int(release.indexLength), at: UInt64(PackHeader.size)),
            SHA256.hash(bytes) == release.indexSHA256
        else { return nil }
        return bytes
    }

    /// Writes the header and index bytes the container will keep to `path` (replaced if there). Not
    /// flushed: it only outlives the install as an unfinished attempt's leftover, and what is read
    /// back is checked (``StoredIndexReader``).
    static func writeStoredIndex(header: [UInt8], index: [UInt8], to path: String) throws {
        let raw = try SystemCall.retrying("open", path: path) {
            open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        }
        let fd = FileDescriptor(rawValue: raw, path: path)
        defer { fd.close() }
        try fd.write(header)
        try fd.write(index)
    }
}
