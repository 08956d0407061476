import Dispatch
import Foundation

/// Runs `body(i)` for each `i` in `0..<count` on a thread of its own and returns when all have
/// returned: the tests of a type's safety under threads, which need more bodies at once than
/// `concurrentPerform` gives on two cores (two).
///
/// ```swift
/// let sum = Atomic<Int>(0)
/// onThreadsOfTheirOwn(8) { i in sum.wrappingAdd(i, ordering: .relaxed) }
/// ```
public func onThreadsOfTheirOwn(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        Thread.detachNewThread {
            body(i)
            group.leave()
        }
    }
    group.wait()
}
