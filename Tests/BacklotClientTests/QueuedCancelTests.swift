import BacklotBasics
import BacklotContainer
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotClient

/// A fetch queued behind another process of the container (the one holding its executor lock,
/// which runs the container's downloads) is waited for by polling; the synchronous caller waiting
/// for it (a C caller, whose `backlot_cancel` had no download to cancel yet) can end it.
@Suite(.serialized) struct QueuedCancelTests {
    /// How many requests the container's queue holds.
    func queued(_ container: ClientContainer) throws -> Int {
        try container.store.database.transaction { tx in
            try tx.query("SELECT COUNT(*) AS n FROM requests", []).first?["n"]?.integer(as: Int.self) ?? 0
        }
    }

    @Test func aFetchQueuedBehindAnotherProcessEndsWhenItsCallerCancelsAndTakesItsRequestBack() throws {
        let f = try ClientFixture()
        _ = try f.publish(seed: 3)
        let manager = try f.manager(container: "c")
        let container = try ClientContainer(path: f.dir.at("c"))
        // Another process runs the container's downloads: this one's fetch queues behind it.
        let executor = try #require(try container.layout.acquire(.executor, waiting: false))
        defer { executor.release() }
        var sawQueued = false
        #expect(throws: CancellationError.self) {
            _ = try BlockingPool.waitForAsync(
                cancelledWhen: {
                    // Cancelled once its request is in the queue (a caller's backlot_cancel then).
                    sawQueued = sawQueued || ((try? queued(container)) ?? 0) > 0
                    return sawQueued
                }
            ) {
                try await manager.fetch(packWithID: "Levels")
            }
        }
        #expect(sawQueued)
        #expect(try queued(container) == 0, "the request is taken back")
        #expect(try container.installed("Levels") == nil)
    }
}
