import BacklotCrypto
import Synchronization

/// Old chunks' samples (``ChunkResemblance``) by chunk ID, taken once for every delta into the
/// same version: the bases of one version (its three predecessors, by default) share most of
/// their chunks, and sampling them was most of a delta's building time.
///
/// Builds on several threads share one cache. A chunk another build is sampling is left to it and
/// looked up again at the end of the file; if it is still not done then, the build samples it
/// itself (the result is the same: samples depend on the bytes, and the bytes on the ID, which every
/// chunk read is checked against or was when it was stored). The cache holds at most `limit`
/// bytes of samples (a sample is 4 bytes for about 256 bytes of chunk); beyond that, chunks are
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
        /// The build samples it and gives the samples back (``keep(_:samples:)``), or says it
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

    /// Bytes counted for a chunk's entry besides its samples: its ID and the array's header.
    static let entryBytes = 64

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

    /// Keeps the samples of a chunk (while the cache has room for them), and ends this build's
    /// claim on it if it had one.
    func keep(_ id: SHA256Digest, samples: [UInt32]) {
        state.withLock { state in
            state.sampling.remove(id)
            let bytes = samples.count * 4 + Self.entryBytes
            guard state.heldBytes + bytes <= limit, state.done[id] == nil else { return }
            state.done[id] = samples
            state.heldBytes += bytes
        }
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
