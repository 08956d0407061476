import BacklotBasics
import BacklotCrypto
import BacklotTestSupport
import Foundation
import Testing

/// The local CA `backlot serve --tls auto` makes, checked by OpenSSL's own command line tool:
/// the server certificate verifies against the CA, names the hosts it was issued for, is a
/// server certificate (not a CA), and stays within Apple's 825-day limit.
@Suite struct LocalCertificateAuthorityTests {
    func openssl(_ arguments: [String]) throws -> (Int32?, String) {
        let outcome = try ChildProcess.run(
            executable: "/usr/bin/openssl", arguments: arguments, environment: ProcessInfo.processInfo.environment,
            until: .now + .seconds(30))
        return (outcome.exitStatus, String(decoding: outcome.output, as: UTF8.self))
    }

    @Test func aServerCertificateVerifiesAgainstItsCA() throws {
        let dir = try TemporaryDirectory("local-ca")
        defer { dir.remove() }
        let ca = try LocalCertificateAuthority.create(commonName: "Backlot test CA")
        let server = try ca.issueServerCertificate(
            dnsNames: ["localhost", "assets.example"], ipAddresses: ["127.0.0.1", "::1"])
        try dir.write("ca.pem", ca.certificatePEM)
        try dir.write("server.pem", server.certificatePEM)
        let (verified, output) = try openssl([
            "verify", "-CAfile", dir.at("ca.pem"), "-purpose", "sslserver", dir.at("server.pem"),
        ])
        #expect(verified == 0, "\(output)")
        let (_, text) = try openssl(["x509", "-in", dir.at("server.pem"), "-noout", "-text"])
        for name in [
            "DNS:localhost", "DNS:assets.example", "IP Address:127.0.0.1", "CA:FALSE", "TLS Web Server Authentication",
        ] {
            #expect(text.contains(name), "the certificate lacks \(name)")
        }
        let days =
            try LocalCertificateAuthority.notAfter(ofCertificate: server.certificatePEM).timeIntervalSinceNow / 86_400
        #expect(days <= Double(LocalCertificateAuthority.maximumServerValidityDays) + 1 && days > 800)

        // Another CA's certificate does not verify: the check above can fail.
        let stranger = try LocalCertificateAuthority.create(commonName: "Someone else")
        try dir.write("stranger.pem", stranger.certificatePEM)
        #expect(try openssl(["verify", "-CAfile", dir.at("stranger.pem"), dir.at("server.pem")]).0 != 0)
    }

    @Test func theFingerprintIsOpenSSLs() throws {
        let dir = try TemporaryDirectory("local-ca-fingerprint")
        defer { dir.remove() }
        let ca = try LocalCertificateAuthority.create(commonName: "Backlot test CA")
        try dir.write("ca.pem", ca.certificatePEM)
        let (_, output) = try openssl(["x509", "-in", dir.at("ca.pem"), "-noout", "-fingerprint", "-sha256"])
        let expected = output.split(separator: "=").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(try LocalCertificateAuthority.fingerprint(ofCertificate: ca.certificatePEM) == expected)
        #expect(throws: BacklotError.self) {
            try LocalCertificateAuthority.fingerprint(
                ofCertificate: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
        }
    }
}
