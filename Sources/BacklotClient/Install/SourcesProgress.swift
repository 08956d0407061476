import Synchronization

/// One install's progress over two sources at once (``PackInstaller/fetchWithPeers(_:_:_:files:id:progress:isCancelled:)``):
/// the origin, whose passes each count again from 0 (a second pass fetches what peers could not
/// give, its figures added to the first's), and the peers' bytes. What is shown never goes back.
///
/// ```swift
/// let shown = SourcesProgress(peerTotal: 1 << 20, progress: { done, total in print(done, total) })
/// shown.origin(done: 4096, total: 8192)
/// _ = shown.peerDone.add(65_536)
/// shown.report()
/// ```
final class SourcesProgress: Sendable {
    struct Origin {
        /// What earlier passes did and had to do.
        var base: UInt64 = 0
        var baseTotal: UInt64 = 0
        /// The current pass's figures.
        var done: UInt64 = 0
        var total: UInt64 = 0
    }

    let peerTotal: UInt64
    let progress: (@Sendable (UInt64, UInt64) -> Void)?
    /// The bytes peers gave, added by the peers' threads.
    let peerDone = AtomicBytes()
    private let originState = Mutex(Origin())
    /// The done figure last shown.
    private let shown = Mutex<UInt64>(0)

    init(peerTotal: UInt64, progress: (@Sendable (UInt64, UInt64) -> Void)?) {
        self.peerTotal = peerTotal
        self.progress = progress
    }

    /// The origin's current pass is at `done` of `total`.
    func origin(done: UInt64, total: UInt64) {
        originState.withLock {
            $0.done = done
            $0.total = total
        }
        report()
    }

    /// A new origin pass starts: the last one's figures become its base.
    func startOriginPass() {
        originState.withLock { o in
            o = Origin(base: o.base + o.done, baseTotal: o.baseTotal + o.total)
        }
    }

    /// Shows the sum of both sources, never less than was shown.
    func report() {
        shown.withLock { last in
            let o = originState.withLock { $0 }
            let done = max(last, o.base + o.done + peerDone.value)
            last = done
            progress?(done, max(done, o.baseTotal + o.total + peerTotal))
        }
    }

    /// Shows the install complete (at least 1 of 1, for an install with nothing to fetch).
    func finish() {
        report()
        let total = shown.withLock { $0 }
        progress?(max(1, total), max(1, total))
    }
}
