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

    /// A published pack, a manager of container "c", and that container's executor lock held, as
    /// another process holds it while it runs the container's downloads: a fetch queues behind it.
    func queuedBehindAnotherProcess() throws -> (ClientFixture, AssetPackManager, ClientContainer, FileLock) {
        let f = try ClientFixture()
        _ = try f.publish(seed: 3)
        let manager = try f.manager(container: "c")
        let container = try ClientContainer(path: f.dir.at("c"))
        let executor = try #require(try container.layout.acquire(.executor, waiting: false))
        return (f, manager, container, executor)
    }

    @Test func aFetchQueuedBehindAnotherProcessEndsWhenItsCallerCancelsAndTakesItsRequestBack() throws {
        let (f, manager, container, executor) = try queuedBehindAnotherProcess()
        defer { withExtendedLifetime(f) { executor.release() } }
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

    /// A queued fetch that ends before it waits — its catalog out of reach, as a cancellation
    /// while the catalog is read ends it — takes its request back too: nothing is left for the
    /// executor to do for a caller who has gone.
    @Test func aQueuedFetchWhoseCatalogCannotBeReadTakesItsRequestBack() throws {
        let (f, manager, container, executor) = try queuedBehindAnotherProcess()
        defer { withExtendedLifetime(f) { executor.release() } }
        f.server.stop(grace: 0)
        #expect(throws: (any Error).self) {
            _ = try BlockingPool.waitForAsync { try await manager.fetch(packWithID: "Levels") }
        }
        #expect(try queued(container) == 0, "the request is taken back")
    }
}
