import Foundation

/// Holds the `Progress` a download reports into (its `cancel()` cancels the download).
final class ProgressBox: @unchecked Sendable {
    let progress: Progress
    init(_ progress: Progress) { self.progress = progress }
}
