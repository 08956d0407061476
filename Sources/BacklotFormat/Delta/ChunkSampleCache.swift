import BacklotCrypto
import Synchronization

/// Chunks' samples (``ChunkResemblance``) by chunk ID, taken once for every delta into the same
/// version: the bases of one version (its three predecessors, by default) share most of their
/// chunks, and sampling them was most of a delta's building time. The new chunks' samples are
/// kept too (each delta compares the same new chunks).
///
/// Builds on several threads share one cache. A chunk another build is sampling is left to it and
/// looked up again at the end of the file; if it is still not done then, the build samples it
/// itself. The result is the same whoever samples a chunk as long as each ID names one content:
/// the stored versions' chunks were checked against their IDs when they were processed. The
/// version being processed is checked while its deltas are built and they are published only if
/// it passes; until then a chunk whose bytes are not its ID's can change which bases its deltas
/// choose, never what is published. Use one cache for the deltas into one version only.
///
/// The cache holds about `limit` bytes of samples (a sample is 4 bytes for about 256 bytes of
/// chunk; each entry counts its array's capacity and ``entryBytes``); beyond that, chunks are
/// sampled and not kept.
///
/// ```swift
/// let samples = ChunkSampleCache()
/// for base in bases {
///     deltas.append(try DeltaBuilder().build(base: base, target: target, samples: samples))
/// }
/// ```
public final class ChunkSampleCache: Sendable {
    /// What a build is to do for one chunk.
    enum Claim {
        /// Its samples, taken before.
        case done([UInt32])
        /// The build samples it and gives the samples back (``finish(_:samples:)``), or says it
        /// could not (``abandon(_:)``).
        case yours
        /// Another build is sampling it.
        case others
    }

    private struct State {
        var done: [SHA256Digest: [UInt32]] = [:]
        var sampling: Set<SHA256Digest> = []
        var heldBytes = 0
    }

    /// The most bytes of samples held (each chunk also counts ``entryBytes``).
    public let limit: Int
    private let state = Mutex(State())

    /// Bytes counted for a chunk's entry besides its samples: its ID, the array's header and the
    /// table's slot.
    static let entryBytes = 112

    /// - Parameter limit: bytes of samples held at most (default 16 MiB: the samples of about
    ///   1 GiB of old chunks).
    public init(limit: Int = 16 << 20) {
        self.limit = limit
    }

    /// The samples of `id` if taken, else whether this build is to take them.
    func claim(_ id: SHA256Digest) -> Claim {
        state.withLock { state in
            if let samples = state.done[id] { return .done(samples) }
            return state.sampling.insert(id).inserted ? .yours : .others
        }
    }

    /// Ends this build's claim on a chunk, keeping its samples (while the cache has room).
    func finish(_ id: SHA256Digest, samples: [UInt32]) {
        state.withLock { state in
            state.sampling.remove(id)
            Self.store(id, samples, in: &state, limit: limit)
        }
    }

    /// Keeps the samples of a chunk no build claimed (a new chunk, compared by each delta), while
    /// the cache has room.
    func offer(_ id: SHA256Digest, samples: [UInt32]) {
        state.withLock { Self.store(id, samples, in: &$0, limit: limit) }
    }

    /// The samples of a new chunk: kept ones, else `take()`'s (taken outside the lock), offered.
    func samples(of id: SHA256Digest, orTaking take: () -> [UInt32]) -> [UInt32] {
        if let known = samples(of: id) { return known }
        let taken = take()
        offer(id, samples: taken)
        return taken
    }

    private static func store(_ id: SHA256Digest, _ samples: [UInt32], in state: inout State, limit: Int) {
        let bytes = samples.capacity * 4 + entryBytes
        guard state.heldBytes + bytes <= limit, state.done[id] == nil else { return }
        state.done[id] = samples
        state.heldBytes += bytes
    }

    /// Gives back a claim whose chunk could not be read.
    func abandon(_ id: SHA256Digest) {
        _ = state.withLock { $0.sampling.remove(id) }
    }

    /// The samples of `id`, nil when no build has kept them.
    func samples(of id: SHA256Digest) -> [UInt32]? {
        state.withLock { $0.done[id] }
    }

    /// Bytes of samples held (with each chunk's ``entryBytes``).
    public var heldBytes: Int { state.withLock { $0.heldBytes } }
}
