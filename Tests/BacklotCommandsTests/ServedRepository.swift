import BacklotRepository
import BacklotServer
import BacklotTestSupport
import Foundation

/// A repository served over HTTPS with its local CA, and its admin token.
struct ServedRepository {
    let dir: TemporaryDirectory
    let repository: Repository
    let server: HostingServer
    let ca: String
    let admin: String

    init(_ label: String) throws {
        dir = try TemporaryDirectory(label)
        let directory = try RepositoryDirectory(path: dir.at("data"))
        repository = try Repository(directory: directory)
        let tls = try LocalTLS.prepare(in: directory, hostnames: [])
        server = try HostingServer(
            repository: repository, configuration: .init(port: 0, tls: (tls.certificatePEM, tls.privateKeyPEM)))
        ca = tls.caCertificatePath
        admin = try String(contentsOfFile: repository.adminTokenPath, encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    func stop() {
        server.stop()
        dir.remove()
    }
}
