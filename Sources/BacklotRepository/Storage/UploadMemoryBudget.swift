import BacklotBasics
import Synchronization

/// The bytes an instance may hold in memory for uploads into a bucket at once (``S3ArchiveStore``):
/// each upload gathers up to a part there before sending it (``S3UploadSink``), so without a bound
/// the heavy requests allowed at once (512) times a part (8–32 MiB) could take gigabytes. An upload
/// takes its part's worth when it starts and gives it back when it ends; one that cannot is
/// refused with ``BacklotError/Code/unavailable`` (503 with `Retry-After`), which `backlot upload`
/// waits out and resumes.
///
/// ```swift
/// let budget = UploadMemoryBudget(limit: 512 << 20)
/// guard budget.take(8 << 20) else { throw … }
/// defer { budget.giveBack(8 << 20) }
/// ```
public final class UploadMemoryBudget: Sendable {
    /// The bytes that may be taken at once.
    public let limit: UInt64
    private let taken = Mutex<UInt64>(0)

    public init(limit: UInt64) { self.limit = limit }

    /// Takes `bytes` if they fit beside what is taken; false (nothing taken) if not.
    public func take(_ bytes: UInt64) -> Bool {
        taken.withLock { t in
            guard bytes <= limit, t <= limit - bytes else { return false }
            t += bytes
            return true
        }
    }

    /// Gives back what ``take(_:)`` took.
    public func giveBack(_ bytes: UInt64) { taken.withLock { $0 -= min($0, bytes) } }

    /// The bytes taken now.
    public var inUse: UInt64 { taken.withLock { $0 } }
}
