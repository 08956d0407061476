import BacklotCrypto
import BacklotFormat

/// The LAN peer cache's wire (docs/protocol.md §12), the one place that spells its paths and limits.
///
/// A device that runs `backlot agent --peer-cache` answers two requests, and nothing else:
///
/// - `GET /backlot-peer/v1/chunks/SHA256`: the plain (uncompressed) bytes of one chunk of an
///   installed release, named by its SHA-256 (64 lower-case hex digits); 404 when it holds none,
///   503 with `Retry-After` when it is busy, on battery or on a metered network.
/// - `POST /backlot-peer/v1/have`: a body of chunk IDs (32 bytes each, at most
///   ``maximumHaveQuery``), answered with one bit per ID, in order, most significant bit first:
///   set when the peer holds that chunk.
///
/// Nothing names an app, a pack or a path; a peer is never asked for a catalog, a key list or an
/// index, and whatever it sends is checked against the signed index before it is used.
///
/// ```swift
/// PeerCacheLayout.chunkPath(id)                         // "/backlot-peer/v1/chunks/9f86d0…"
/// PeerCacheLayout.chunkID(path: "/backlot-peer/v1/chunks/9f86d0…")   // id
/// ```
public enum PeerCacheLayout {
    /// The DNS-SD service type peers advertise and browse on the local link.
    public static let serviceType = "_backlot._tcp"
    /// The port a peer cache listens on unless configured otherwise.
    public static let defaultPort: UInt16 = 7301
    /// The prefix of a chunk's path.
    public static let chunkPrefix = "/backlot-peer/v1/chunks/"
    /// The path of the question "which of these chunks do you hold?".
    public static let havePath = "/backlot-peer/v1/have"
    /// The most chunk IDs one `have` question names (512 KiB of body; a multiple of 8, so that the
    /// answers of several questions join bit for bit).
    public static let maximumHaveQuery = 16_384
    /// The largest chunk a peer sends: the largest a pack may hold.
    public static let maximumChunkBytes = Int(PackIndex.Limits.chunkBytes)

    /// The path of chunk `id`.
    public static func chunkPath(_ id: SHA256Digest) -> String { chunkPrefix + id.hex }

    /// The chunk a path names; nil for any other path (exactly 64 lower-case hex digits after the prefix).
    public static func chunkID(path: String) -> SHA256Digest? {
        guard path.hasPrefix(chunkPrefix) else { return nil }
        let hex = path.dropFirst(chunkPrefix.count)
        guard hex.utf8.count == 64, hex.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { return nil }
        return SHA256Digest(hex: String(hex))
    }

    /// The body of a `have` question.
    public static func haveQuery(_ ids: some Collection<SHA256Digest>) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(ids.count * SHA256Digest.byteCount)
        for id in ids { body += id.bytes }
        return body
    }

    /// The chunk IDs a `have` body names; nil when it is not a whole number of IDs, or names none
    /// or more than ``maximumHaveQuery``.
    public static func haveIDs(_ body: [UInt8]) -> [SHA256Digest]? {
        let size = SHA256Digest.byteCount
        guard !body.isEmpty, body.count % size == 0, body.count / size <= maximumHaveQuery else { return nil }
        return stride(from: 0, to: body.count, by: size).map { SHA256Digest(bytes: body[$0..<$0 + size]) }
    }

    /// The answer to a `have` question: bit `i` (most significant first) set when `holds(i)`.
    public static func haveAnswer(count: Int, holds: (Int) -> Bool) -> [UInt8] {
        var bits = [UInt8](repeating: 0, count: (count + 7) / 8)
        for i in 0..<count where holds(i) { bits[i / 8] |= 0x80 >> UInt8(i % 8) }
        return bits
    }

    /// Whether bit `i` of a `have` answer is set (false past its end).
    public static func answerHolds(_ answer: [UInt8], _ i: Int) -> Bool {
        i / 8 < answer.count && answer[i / 8] & (0x80 >> UInt8(i % 8)) != 0
    }
}
