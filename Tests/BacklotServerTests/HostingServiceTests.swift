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
}
