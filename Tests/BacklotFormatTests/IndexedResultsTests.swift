import BacklotBasics
import Dispatch
import Testing

@testable import BacklotFormat

/// The proof of `IndexedResults`' `@unchecked Sendable`, exercised as the pack's builder uses it:
/// worker threads each write the indices they take from one counter, and every result is read
/// after the threads are waited for.
struct IndexedResultsTests {
    @Test func workerThreadsWriteTheirIndicesAndEveryResultIsReadAfter() {
        let count = 100_000
        let results = IndexedResults<[Int]>(count: count)
        let next = AtomicCounter()
        let pool = BlockingPool(threads: 4, name: "backlot-test")
        defer { pool.stop() }
        let done = DispatchGroup()
        for worker in 0..<4 {
            done.enter()
            pool.submit {
                defer { done.leave() }
                while true {
                    let i = next.increment()
                    guard i < count else { return }
                    results.set(i, [i, worker])  // an array: a result with storage of its own
                }
            }
        }
        done.wait()
        var seen = 0
        for i in 0..<count where results.get(i).first == i { seen += 1 }
        #expect(seen == count, "every index holds what its worker wrote")
    }
}
