import BacklotCommands
import Foundation

/// Runs the command line on a thread of its own, as a process's main thread runs it. Commands
/// that wait for async work (`fetch`, `verify --repair`, `agent`: `BlockingPool.waitForAsync`)
/// block their thread meanwhile; a test's own thread is one of Swift's cooperative pool (two on
/// two cores), which that work needs, so two such tests at once would wait for each other forever.
func commandLineOnThread(_ arguments: [String], io: CapturedIO) async -> Int32 {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: BacklotCLI.main(arguments, io: io)) }
    }
}
