import BacklotBasics
import BacklotCrypto
import BacklotHTTPClient
import BacklotHTTPServer
import BacklotRepository
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

/// An expired local CA (issue #34): `--tls auto` refuses to start on it, saying which certificate
/// (its path and subject) expired and when, and how to renew it; the hint's command does renew it.
/// A client that meets a certificate past its date is told that, not to check its CA file.
@Suite struct LocalTLSExpiryTests {
    /// The certificate's notAfter as `openssl x509 -enddate` reads it, as an ISO 8601 UTC time.
    func opensslExpiry(_ path: String) throws -> String {
        let outcome = try ChildProcess.run(
            executable: "/usr/bin/openssl", arguments: ["x509", "-in", path, "-noout", "-enddate"],
            environment: ProcessInfo.processInfo.environment, until: .now + .seconds(30))
        let text = String(decoding: outcome.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(outcome.exitStatus == 0, "\(text)")
        // notAfter=Dec  3 20:45:28 2026 GMT
        let value = text.replacingOccurrences(of: "notAfter=", with: "").split(separator: " ").joined(separator: " ")
        let parser = DateFormatter()
        parser.locale = Locale(identifier: "en_US_POSIX")
        parser.timeZone = TimeZone(identifier: "UTC")
        parser.dateFormat = "MMM d HH:mm:ss yyyy zzz"
        let date = try #require(parser.date(from: value), "openssl said \(text)")
        return ISO8601DateFormatter().string(from: date)
    }

    @Test func anExpiredCASaysWhichWhenAndHowToRenewIt() throws {
        let dir = try TemporaryDirectory("tls-expired-ca")
        defer { dir.remove() }
        let repo = try RepositoryDirectory(path: dir.at("data"))
        let caPath = repo.tlsPath + "/ca.pem"
        // A CA whose validity ended a day ago.
        let old = try LocalCertificateAuthority.create(
            commonName: "Backlot Local CA (expired test)", permittedDNSNames: ["localhost"],
            permittedIPAddresses: ["127.0.0.1", "::1"], days: -1)
        try RepositoryDirectory.writeSecret(old.privateKeyPEM, to: repo.tlsPath + "/ca-key.pem")
        try RepositoryDirectory.writePublic(old.certificatePEM, to: caPath)
        let when = try opensslExpiry(caPath)
        #expect(
            ISO8601DateFormatter().string(
                from: try LocalCertificateAuthority.notAfter(ofCertificate: old.certificatePEM))
                == when)
        #expect(
            try LocalCertificateAuthority.subject(ofCertificate: old.certificatePEM)
                == "CN=Backlot Local CA (expired test)/O=Backlot")

        var refused: BacklotError? = nil
        do {
            _ = try LocalTLS.prepare(in: repo, hostnames: [])
        } catch let e as BacklotError {
            refused = e
        }
        let e = try #require(refused, "a server started on an expired CA")
        #expect(e.code == .tls && e.context == caPath)
        #expect(
            e.message
                == "the local CA \(caPath) (CN=Backlot Local CA (expired test)/O=Backlot) expired at \(when): clients refuse every certificate it signs",
            "\(e.message)")
        let hint = try #require(e.hint)
        let command = "mv \(repo.tlsPath) \(repo.tlsPath).expired"
        #expect(
            hint.contains(command) && hint.contains("--tls auto") && hint.contains("trust the new \(caPath)"), "\(hint)"
        )
        #expect(hint.contains("--tls-cert CERT.pem --tls-key KEY.pem"), "\(hint)")
        // Nothing was issued from it.
        #expect(!FileSystem.exists(repo.tlsPath + "/server.pem"))

        // The hint's command renews it: the next start makes a new CA, valid, for the same names.
        #expect(rename(repo.tlsPath, repo.tlsPath + ".expired") == 0)
        let renewed = try LocalTLS.prepare(in: try RepositoryDirectory(path: dir.at("data")), hostnames: [])
        #expect(renewed.created && renewed.caPermittedNames == ["localhost", "127.0.0.1", "::1"])
        let fresh = try String(contentsOfFile: caPath, encoding: .utf8)
        #expect(try LocalCertificateAuthority.notAfter(ofCertificate: fresh) > Date())
    }

    @Test func aClientMeetingAnExpiredCertificateIsToldSo() throws {
        let dir = try TemporaryDirectory("tls-expired-client")
        defer { dir.remove() }
        let ca = try LocalCertificateAuthority.create(commonName: "Backlot Local CA (expired client test)", days: -1)
        let issued = try ca.issueServerCertificate(dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        try dir.write("ca.pem", ca.certificatePEM)
        let server = try HTTPServer(configuration: .init(port: 0, tls: (issued.certificatePEM, issued.privateKeyPEM))) {
            _ in .respond(HTTPResponse(status: 200, body: .bytes(Array("ok".utf8))))
        }
        defer { server.stop(grace: 0) }
        var refused: BacklotError? = nil
        do {
            _ = try HTTPClient(caFile: dir.at("ca.pem")).send("GET", "https://127.0.0.1:\(server.port)/")
        } catch let e as BacklotError {
            refused = e
        }
        let e = try #require(refused, "a certificate signed by an expired CA was accepted")
        #expect(e.code == .tls && e.message.contains("certificate has expired"), "\(e)")
        let hint = try #require(e.hint)
        #expect(hint.contains("the CA in \(dir.at("ca.pem"))") && hint.contains("past its expiry date"), "\(hint)")
        #expect(!hint.contains("check that this file is that server's CA"), "\(hint)")
    }
}
