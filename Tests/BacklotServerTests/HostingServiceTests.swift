import BacklotBasics
import BacklotHTTPClient
import BacklotHTTPServer
import BacklotProtocol
import BacklotRepository
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

/// `backlot serve`'s composition, without the command line: the service answers on its listener,
/// its catalogs name the public URL given, and once stopped nothing answers.
@Suite struct HostingServiceTests {
    @Test func theServiceAnswersUntilItIsStoppedAndNamesItsPublicURL() throws {
        let dir = try TemporaryDirectory("hosting-service")
        defer { dir.remove() }
        let listener = try ListeningSocket(host: "127.0.0.1", port: 0)
        var configuration = HostingService.Configuration(
            directory: try RepositoryDirectory(path: dir.at("data")), listener: listener)
        configuration.publicURL = "https://cdn.example.com/"
        configuration.leaseSeconds = 2
        let service = try HostingService(configuration) { _ in }
        let url = service.server.baseURL + PublishedTreeLayout.currentKeyList.path
        #expect(service.server.baseURL == "http://127.0.0.1:\(listener.port)/")
        let answer = try HTTPClient().send("GET", url)
        #expect(answer.status == 200 && answer.text.contains("application/vnd.backlot.root+json"), "\(answer.status)")
        #expect(service.repository.publication.publicURL == "https://cdn.example.com/")

        service.stop(grace: 1)
        #expect(throws: (any Error).self, "nothing answers once stopped") { try HTTPClient().send("GET", url) }
    }

    /// `HostingService.launch`, as `backlot serve` calls it: it serves; a second launch on the
    /// same data folder is refused and holds nothing (its port is free again); a launch whose
    /// database cannot be opened lets the data folder go, so the next one starts.
    @Test func aLaunchHoldsItsFolderAndAFailedOneHoldsNothing() throws {
        let dir = try TemporaryDirectory("hosting-launch")
        defer { dir.remove() }
        var launch = HostingService.Launch(dataFolder: dir.at("data"))
        launch.port = 0
        launch.tls = .off
        launch.configure = { $0.leaseSeconds = 2 }
        let first = try HostingService.launch(launch) { _ in }
        let url = first.service.server.baseURL + PublishedTreeLayout.currentKeyList.path
        #expect(try HTTPClient().send("GET", url).status == 200)
        #expect(first.localTLS == nil && first.trustedCA == nil && first.tree == nil)

        // The same folder again, on a port of its own: refused by the folder's lock.
        let port = try ListeningSocket(host: "127.0.0.1", port: 0).port  // closed as it goes
        var second = launch
        second.port = port
        #expect(throws: BacklotError.self) { try HostingService.launch(second) { _ in } }
        _ = try ListeningSocket(host: "127.0.0.1", port: port)  // the refused launch let its port go
        first.stop(grace: 1)

        struct Unreachable: Error {}
        var broken = launch
        broken.openDatabase = { throw Unreachable() }
        #expect(throws: Unreachable.self) { try HostingService.launch(broken) { _ in } }
        let again = try HostingService.launch(launch) { _ in }  // the folder was let go
        #expect(
            try HTTPClient().send("GET", again.service.server.baseURL + PublishedTreeLayout.currentKeyList.path).status
                == 200)
        again.stop(grace: 1)
    }
}
