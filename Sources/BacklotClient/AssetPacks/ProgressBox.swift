import Foundation

/// A `Progress` handed across threads: the one box for it in Backlot (the executor's downloads,
/// the agent's pack installs). `Progress` is thread-safe (its counts and `cancel()` take its own
/// lock), which is why the box may be `Sendable`; the box has no mutable state of its own.
///
/// ```swift
/// let box = ProgressBox(Progress(totalUnitCount: 100))
/// DispatchQueue.global().async { box.progress.cancel() }
/// ```
public final class ProgressBox: Sendable {
    public let progress: Progress
    public init(_ progress: Progress) { self.progress = progress }
}
