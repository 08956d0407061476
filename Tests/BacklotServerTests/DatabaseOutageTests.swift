import BacklotBasics
import BacklotPostgres
import BacklotRepository
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

/// The metadata database going away under a running server: the API answers 503 with
/// `Retry-After` (never 401 or 500), the published tree is still served, and the server recovers
/// by itself when the database is back.
@Suite(.serialized) struct DatabaseOutageTests {
    @Test(.requires(.postgres)) func theAPIAnswers503WhileTheDatabaseIsDownAndRecoversByItself()
        throws
    {
        let cluster = try PostgresCluster()  // its own: stopping the shared one would disturb other tests
        defer { cluster.stop() }
        let dir = try TemporaryDirectory("outage")
        defer { dir.remove() }
        let repository = try Repository(
            directory: RepositoryDirectory(path: dir.at("data")),
            database: PostgresDatabase(url: cluster.createDatabase("outage")))
        let admin = try repository.tokens.createInitialAdmin()
        let server = try HostingServer(repository: repository, configuration: .init(port: 0))
        defer { server.stop(grace: 0) }
        func apps() throws -> Curl.Result {
            try Curl.run(server.baseURL + "api/apps", headers: ["Authorization": "Bearer \(admin)"])
        }
        try repository.apps.create("com.example.game")
        #expect(try apps().status == 200)

        try cluster.stopServer()
        let during = try apps()
        #expect(during.status == 503, "\(during.text)")
        #expect(during.headers["retry-after"] == "5" || during.headers["Retry-After"] == "5", "\(during.headers)")
        #expect(during.text.contains("unavailable"))
        // The tree needs no database.
        #expect(try Curl.run(server.baseURL + "v1/keys/root.json").status == 200)

        try cluster.start()
        let after = try apps()
        #expect(after.status == 200 && after.text.contains("com.example.game"), "\(after.text)")
    }
}
