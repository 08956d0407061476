import BacklotBasics
import BacklotCrypto
import BacklotFormat
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Where a container's installed releases hold each chunk, for a peer cache to serve them
/// (docs/peer-cache.md): a chunk is found by its SHA-256 only, read from the installed file that
/// holds it, and checked against its ID before it is handed out, so a damaged or altered file is
/// never served.
///
/// The map follows the container: it is rebuilt when the installed releases change (their names
/// are looked at, when a request comes, no more often than ``refreshInterval``; the indexes are
/// read again only when the names changed), and a release being replaced may answer nil for a
/// moment.
///
/// ```swift
/// let chunks = try InstalledChunks(containerPath: "/var/lib/game")
/// if let bytes = chunks.bytes(of: id) { send(bytes) }
/// ```
public final class InstalledChunks: Sendable {
    let container: ClientContainer
    /// How long a map is used before the installed releases are looked at again.
    public let refreshInterval: Duration
    private let state = Mutex<State>(State())

    struct Location {
        let path: String
        let offset: UInt64
        let size: Int
    }

    struct State {
        var releases: [String] = []
        var chunks: [SHA256Digest: Location] = [:]
        var checked: ContinuousClock.Instant?
    }

    /// - Throws: ``BacklotError/Code/invalidInput`` when `containerPath` is not a container.
    public init(containerPath: String, refreshInterval: Duration = .seconds(2)) throws {
        container = try ClientContainer(existingAt: containerPath)
        self.refreshInterval = refreshInterval
    }

    /// Whether an installed release holds chunk `id` (without reading it).
    public func holds(_ id: SHA256Digest) -> Bool {
        refreshIfDue()
        return state.withLock { $0.chunks[id] != nil }
    }

    /// The size of chunk `id`, when an installed release holds it (without reading it).
    public func size(of id: SHA256Digest) -> Int? {
        refreshIfDue()
        return state.withLock { $0.chunks[id]?.size }
    }

    /// The bytes of chunk `id` from the installed file that holds it, checked against `id`; nil
    /// when no installed release holds it, or its file no longer has those bytes.
    public func bytes(of id: SHA256Digest) -> [UInt8]? {
        refreshIfDue()
        guard let place = state.withLock({ $0.chunks[id] }),
            let bytes = try? Self.read(place),
            SHA256.hash(bytes) == id
        else { return nil }
        return bytes
    }

    /// Reads a chunk's bytes, never through a link and never from anything but a regular file
    /// (installed files are; a FIFO put in one's place must not block the server).
    static func read(_ place: Location) throws -> [UInt8] {
        let raw = open(place.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard raw >= 0 else { throw SystemCall.error("open", path: place.path) }
        let fd = FileDescriptor(rawValue: raw, path: place.path)
        defer { fd.close() }
        guard try FileSystem.status(of: fd).kind == .regular else { return [] }
        return try fd.read(count: place.size, at: place.offset)
    }

    /// Rebuilds the map when the installed releases changed since it was made.
    func refreshIfDue() {
        let now = ContinuousClock.now
        let due = state.withLock { s -> Bool in
            guard s.checked.map({ now - $0 >= refreshInterval }) ?? true else { return false }
            s.checked = now
            return true
        }
        // The names first (a few bytes a pack); the indexes only when they changed.
        guard due, let names = try? container.installedNames(), state.withLock({ $0.releases != names }),
            let installed = try? container.installed()
        else { return }
        var chunks: [SHA256Digest: Location] = [:]
        for release in installed {
            guard let (_, index) = PackInstaller.decodeStored(release.indexBytes, name: release.digest) else {
                continue
            }
            let folder = container.releaseFolder(release.id, digest: release.digest)
            for file in index.files {
                var offset: UInt64 = 0
                for c in file.chunks {
                    let chunk = index.chunks[c]
                    if chunks[chunk.id] == nil {
                        chunks[chunk.id] = Location(
                            path: folder + "/" + file.path, offset: offset, size: Int(chunk.uncompressedSize))
                    }
                    offset += UInt64(chunk.uncompressedSize)
                }
            }
        }
        state.withLock {
            $0.releases = names
            $0.chunks = chunks
        }
    }
}
