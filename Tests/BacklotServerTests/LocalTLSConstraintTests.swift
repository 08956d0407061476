import BacklotBasics
import BacklotCrypto
import BacklotRepository
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotServer

#if canImport(Glibc)
import Glibc
#endif

/// `--tls auto`'s CA under `DIR/tls` permits only the names it was made for: a certificate
/// forged with `DIR/tls/ca-key.pem` for another site is refused by whoever trusts `ca.pem`; a
/// start asked for a name the CA does not permit fails and says what to do; a CA made by an
/// earlier version (no constraints) keeps working, with a warning.
@Suite struct LocalTLSConstraintTests {
    func openssl(_ arguments: [String]) throws -> (status: Int32?, output: String) {
        let outcome = try ChildProcess.run(
            executable: "/usr/bin/openssl", arguments: arguments, environment: ProcessInfo.processInfo.environment,
            until: .now + .seconds(30))
        return (outcome.exitStatus, String(decoding: outcome.output, as: UTF8.self))
    }

    @Test func theAutoCAPermitsTheServersNamesOnly() throws {
        let dir = try TemporaryDirectory("tls-constraints")
        defer { dir.remove() }
        let repo = try RepositoryDirectory(path: dir.at("data"))
        let tls = try LocalTLS.prepare(in: repo, hostnames: ["assets.test", "192.0.2.7"])
        #expect(tls.created && tls.caIsNameConstrained && tls.caWarning == nil)
        #expect(tls.caPermittedNames == ["localhost", "assets.test", "127.0.0.1", "::1", "192.0.2.7"])
        let namesPath = repo.tlsPath + "/ca-names.txt"
        #expect(
            (try? String(contentsOfFile: namesPath, encoding: .utf8))
                == "localhost\nassets.test\n127.0.0.1\n::1\n192.0.2.7\n")
        var st = stat()
        #expect(stat(namesPath, &st) == 0 && st.st_mode & 0o777 == 0o644)
        let (_, text) = try openssl(["x509", "-in", tls.caCertificatePath, "-noout", "-text"])
        #expect(text.contains("X509v3 Name Constraints: critical") && text.contains("CA:TRUE, pathlen:0"), "\(text)")

        // The server's certificate verifies for localhost, 127.0.0.1 and the configured names.
        let server = repo.tlsPath + "/server.pem"
        for check in [
            ["-verify_hostname", "localhost"], ["-verify_ip", "127.0.0.1"], ["-verify_ip", "::1"],
            ["-verify_hostname", "assets.test"], ["-verify_ip", "192.0.2.7"],
        ] {
            let (status, output) = try openssl(
                ["verify", "-CAfile", tls.caCertificatePath, "-purpose", "sslserver"] + check + [server])
            #expect(status == 0, "\(check): \(output)")
        }

        // One forged with the CA's key for another site is refused.
        try dir.write(
            "evil.ext", "subjectAltName=DNS:evil.example,DNS:www.example-bank.com\nextendedKeyUsage=serverAuth\n")
        #expect(
            try openssl([
                "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                dir.at("evil-key.pem"), "-out", dir.at("evil.csr"), "-subj", "/CN=evil.example",
            ]).status == 0)
        let forged = try openssl([
            "x509", "-req", "-in", dir.at("evil.csr"), "-CA", tls.caCertificatePath, "-CAkey",
            repo.tlsPath + "/ca-key.pem", "-set_serial", "4242", "-days", "30", "-extfile", dir.at("evil.ext"),
            "-out", dir.at("evil.pem"),
        ])
        #expect(forged.status == 0, "\(forged.output)")
        for host in ["evil.example", "www.example-bank.com"] {
            let (status, output) = try openssl([
                "verify", "-CAfile", tls.caCertificatePath, "-verify_hostname", host, dir.at("evil.pem"),
            ])
            #expect(status != 0 && output.contains("permitted subtree violation"), "\(host): \(output)")
        }

        // Fewer names, or a subdomain of a permitted one, are served by the same CA.
        let fewer = try LocalTLS.prepare(in: repo, hostnames: ["assets.test"])
        #expect(fewer.caFingerprint == tls.caFingerprint && fewer.caIsNameConstrained)
        let sub = try LocalTLS.prepare(in: repo, hostnames: ["cdn.assets.test"])
        #expect(sub.caFingerprint == tls.caFingerprint)
        #expect(
            try openssl([
                "verify", "-CAfile", tls.caCertificatePath, "-verify_hostname", "cdn.assets.test", server,
            ]).status == 0)
    }

    @Test func aNameTheCADoesNotPermitFailsAndSaysWhatToDo() throws {
        let dir = try TemporaryDirectory("tls-constraints-new-name")
        defer { dir.remove() }
        let repo = try RepositoryDirectory(path: dir.at("data"))
        let first = try LocalTLS.prepare(in: repo, hostnames: ["assets.test"])
        let before = try String(contentsOfFile: repo.tlsPath + "/server.pem", encoding: .utf8)
        #expect {
            try LocalTLS.prepare(in: repo, hostnames: ["assets.test", "other.test", "192.0.2.8"])
        } throws: { error in
            guard let e = error as? BacklotError else { return false }
            let text = e.description
            return e.code == .invalidInput && e.context == first.caCertificatePath
                && e.message.contains("does not permit other.test, 192.0.2.8")
                && e.message.contains("localhost, assets.test, 127.0.0.1, ::1")
                && e.hint?.contains("remove \(repo.tlsPath)") == true
                && e.hint?.contains("trust its new ca.pem") == true
                && e.hint?.contains("--tls-cert CERT.pem --tls-key KEY.pem") == true && !text.isEmpty
        }
        // Nothing was changed: the server keeps its certificate, and a start for its names works.
        #expect(try String(contentsOfFile: repo.tlsPath + "/server.pem", encoding: .utf8) == before)
        let again = try LocalTLS.prepare(in: repo, hostnames: ["assets.test"])
        #expect(!again.created && again.caFingerprint == first.caFingerprint)

        // Removing DIR/tls makes a new CA that permits the new names too.
        FileSystem.removeTree(repo.tlsPath)
        let fresh = try LocalTLS.prepare(
            in: try RepositoryDirectory(path: dir.at("data")), hostnames: ["assets.test", "other.test", "192.0.2.8"])
        #expect(fresh.created && fresh.caFingerprint != first.caFingerprint)
        #expect(fresh.caPermittedNames == ["localhost", "assets.test", "other.test", "127.0.0.1", "::1", "192.0.2.8"])
    }

    /// A CA an earlier version made (no name constraints, no ca-names.txt) keeps serving any
    /// name, and prepare says how to replace it.
    @Test func anUnconstrainedCAFromAnEarlierVersionStillLoads() throws {
        let dir = try TemporaryDirectory("tls-constraints-old-ca")
        defer { dir.remove() }
        let repo = try RepositoryDirectory(path: dir.at("data"))
        let old = try LocalCertificateAuthority.create(commonName: "Backlot Local CA (old)")
        try RepositoryDirectory.writeSecret(old.privateKeyPEM, to: repo.tlsPath + "/ca-key.pem")
        try RepositoryDirectory.writePublic(old.certificatePEM, to: repo.tlsPath + "/ca.pem")
        let tls = try LocalTLS.prepare(in: repo, hostnames: ["anything.test"])
        #expect(tls.created && !tls.caIsNameConstrained && tls.caPermittedNames == nil)
        #expect(tls.caFingerprint == (try LocalCertificateAuthority.fingerprint(ofCertificate: old.certificatePEM)))
        let warning = try #require(tls.caWarning)
        #expect(
            warning.contains("without name constraints") && warning.contains(tls.caCertificatePath)
                && warning.contains(repo.tlsPath + "/ca-key.pem") && warning.contains("remove \(repo.tlsPath)"),
            "\(warning)")
        #expect(!FileSystem.exists(repo.tlsPath + "/ca-names.txt"))
        let (status, output) = try openssl([
            "verify", "-CAfile", tls.caCertificatePath, "-verify_hostname", "anything.test",
            repo.tlsPath + "/server.pem",
        ])
        #expect(status == 0, "\(output)")
        // Another name is issued from it as before, without a constraint check.
        let other = try LocalTLS.prepare(in: repo, hostnames: ["else.test"])
        #expect(other.created && other.caFingerprint == tls.caFingerprint && other.caWarning != nil)
    }
}
