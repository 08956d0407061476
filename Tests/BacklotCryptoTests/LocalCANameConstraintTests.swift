import BacklotBasics
import BacklotCrypto
import BacklotTestSupport
import Foundation
import Testing

/// A CA made for some names carries a critical nameConstraints extension, so that a certificate
/// signed with its key for any other name (what a thief of the key would make) is refused by a
/// verifier that trusts the CA, while the CA's own server certificates still verify. Checked by
/// OpenSSL's command line tool, with certificates the tool makes itself from the CA's key.
@Suite struct LocalCANameConstraintTests {
    func openssl(_ arguments: [String]) throws -> (status: Int32?, output: String) {
        let outcome = try ChildProcess.run(
            executable: "/usr/bin/openssl", arguments: arguments, environment: ProcessInfo.processInfo.environment,
            until: .now + .seconds(30))
        return (outcome.exitStatus, String(decoding: outcome.output, as: UTF8.self))
    }

    /// A certificate for `subject` with extensions `extensions` (openssl x509 -extfile lines),
    /// signed by the openssl tool with the CA's certificate and key (not by Backlot).
    func forge(
        in dir: TemporaryDirectory, _ name: String, subject: String, extensions: String, ca: String, caKey: String
    ) throws -> String {
        try dir.write(name + ".ext", extensions + "\n")
        let request = try openssl([
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", dir.at(name + "-key.pem"), "-out", dir.at(name + ".csr"), "-subj", "/CN=" + subject,
        ])
        #expect(request.status == 0, "\(request.output)")
        let signed = try openssl([
            "x509", "-req", "-in", dir.at(name + ".csr"), "-CA", ca, "-CAkey", caKey, "-set_serial",
            String(UInt32.random(in: 1...UInt32.max)), "-days", "30", "-extfile", dir.at(name + ".ext"),
            "-out", dir.at(name + ".pem"),
        ])
        #expect(signed.status == 0, "\(signed.output)")
        return dir.at(name + ".pem")
    }

    @Test func theCAPermitsItsNamesOnly() throws {
        let dir = try TemporaryDirectory("local-ca-constraints")
        defer { dir.remove() }
        let ca = try LocalCertificateAuthority.create(
            commonName: "Backlot constrained CA", permittedDNSNames: ["localhost", "Assets.Test"],
            permittedIPAddresses: ["127.0.0.1", "::1", "192.0.2.7"])
        let caPath = try dir.write("ca.pem", ca.certificatePEM)
        let caKey = try dir.write("ca-key.pem", ca.privateKeyPEM, mode: 0o600)

        // The extension as OpenSSL reads it, beside the CA's other extensions.
        let (_, text) = try openssl(["x509", "-in", caPath, "-noout", "-text"])
        for line in [
            "X509v3 Name Constraints: critical", "DNS:localhost", "DNS:assets.test", "IP:127.0.0.1/255.255.255.255",
            "IP:0:0:0:0:0:0:0:1/FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF", "IP:192.0.2.7/255.255.255.255",
            "X509v3 Basic Constraints: critical", "CA:TRUE, pathlen:0", "Certificate Sign, CRL Sign",
            "X509v3 Subject Key Identifier",
        ] {
            #expect(text.contains(line), "the CA lacks \(line):\n\(text)")
        }
        #expect(try ca.permittedNames() == ["localhost", "assets.test", "127.0.0.1", "::1", "192.0.2.7"])

        // Its own server certificate verifies for each of its names.
        let server = try ca.issueServerCertificate(
            dnsNames: ["localhost", "assets.test", "cdn.assets.test"], ipAddresses: ["127.0.0.1", "::1", "192.0.2.7"])
        let serverPath = try dir.write("server.pem", server.certificatePEM)
        for check in [
            ["-verify_hostname", "localhost"], ["-verify_hostname", "assets.test"],
            ["-verify_hostname", "cdn.assets.test"], ["-verify_ip", "127.0.0.1"], ["-verify_ip", "::1"],
            ["-verify_ip", "192.0.2.7"],
        ] {
            let (status, output) = try openssl(
                ["verify", "-CAfile", caPath, "-purpose", "sslserver"] + check + [serverPath])
            #expect(status == 0, "\(check): \(output)")
        }

        // Certificates made with the CA's key for other names are refused: a DNS name, a
        // look-alike suffix, an address, and a host name in the common name alone.
        let forged = [
            (
                "evil", "evil.example", "subjectAltName=DNS:evil.example\nextendedKeyUsage=serverAuth",
                ["-verify_hostname", "evil.example"]
            ),
            (
                "suffix", "badassets.test", "subjectAltName=DNS:badassets.test\nextendedKeyUsage=serverAuth",
                ["-verify_hostname", "badassets.test"]
            ),
            (
                "address", "203.0.113.9", "subjectAltName=IP:203.0.113.9\nextendedKeyUsage=serverAuth",
                ["-verify_ip", "203.0.113.9"]
            ),
            (
                "common-name", "www.example-bank.com", "extendedKeyUsage=serverAuth",
                ["-verify_hostname", "www.example-bank.com"]
            ),
        ]
        let stranger = try LocalCertificateAuthority.create(commonName: "Unconstrained CA")
        let strangerPath = try dir.write("stranger.pem", stranger.certificatePEM)
        let strangerKey = try dir.write("stranger-key.pem", stranger.privateKeyPEM, mode: 0o600)
        for (name, subject, extensions, check) in forged {
            let evil = try forge(in: dir, name, subject: subject, extensions: extensions, ca: caPath, caKey: caKey)
            let (status, output) = try openssl(["verify", "-CAfile", caPath] + check + [evil])
            #expect(status != 0 && output.contains("permitted subtree violation"), "\(name): \(output)")
            // The same certificate from a CA without constraints verifies: the refusal is the constraint's.
            let control = try forge(
                in: dir, name + "-control", subject: subject, extensions: extensions, ca: strangerPath,
                caKey: strangerKey)
            let accepted = try openssl(["verify", "-CAfile", strangerPath] + check + [control])
            #expect(accepted.status == 0, "\(name) from an unconstrained CA: \(accepted.output)")
        }
    }

    @Test func namesOutsideTheConstraintsAreNamedAndNeverIssued() throws {
        let ca = try LocalCertificateAuthority.create(
            commonName: "Backlot constrained CA", permittedDNSNames: ["localhost", "assets.test"],
            permittedIPAddresses: ["127.0.0.1", "::1"])
        #expect(
            try ca.namesNotPermitted(
                dnsNames: ["localhost", "cdn.assets.test", "ASSETS.TEST", "evil.example", "badassets.test"],
                ipAddresses: ["127.0.0.1", "192.0.2.8", "::1", "::2"])
                == ["evil.example", "badassets.test", "192.0.2.8", "::2"])
        #expect {
            try ca.issueServerCertificate(dnsNames: ["localhost", "evil.example"], ipAddresses: ["127.0.0.1"])
        } throws: { error in
            (error as? BacklotError)?.code == .invalidInput && "\(error)".contains("evil.example")
        }
        // An address-only certificate verifies too (its subject is not taken for a host name).
        let dir = try TemporaryDirectory("local-ca-address-only")
        defer { dir.remove() }
        let issued = try ca.issueServerCertificate(dnsNames: [], ipAddresses: ["127.0.0.1"])
        let (status, output) = try openssl([
            "verify", "-CAfile", try dir.write("ca.pem", ca.certificatePEM), "-verify_ip", "127.0.0.1",
            try dir.write("server.pem", issued.certificatePEM),
        ])
        #expect(status == 0, "\(output)")

        // A wildcard name permits its domain.
        let wildcard = try LocalCertificateAuthority.create(
            commonName: "Wildcard CA", permittedDNSNames: ["*.lan.test"], permittedIPAddresses: [])
        #expect(try wildcard.permittedNames() == ["lan.test"])
        #expect(
            try wildcard.namesNotPermitted(dnsNames: ["*.lan.test", "a.lan.test", "lan.test"], ipAddresses: []) == [])
    }

    @Test func namesThatAreNotNamesAreRefused() throws {
        for name in ["localhost,DNS:evil.example", "a b", "", "évil.test", "a..b", "x:y"] {
            #expect(throws: BacklotError.self, "\(name)") {
                try LocalCertificateAuthority.create(
                    commonName: "CA", permittedDNSNames: [name], permittedIPAddresses: ["127.0.0.1"])
            }
        }
        #expect(throws: BacklotError.self) {
            try LocalCertificateAuthority.create(
                commonName: "CA", permittedDNSNames: ["localhost"], permittedIPAddresses: ["127.0.0.1/8"])
        }
        #expect(throws: BacklotError.self) {
            try LocalCertificateAuthority.create(commonName: "CA", permittedDNSNames: [], permittedIPAddresses: [])
        }
    }

    /// A CA without constraints (as earlier versions made) permits everything and says so.
    @Test func anUnconstrainedCAHasNoPermittedNames() throws {
        let ca = try LocalCertificateAuthority.create(commonName: "Old CA")
        #expect(try ca.permittedNames() == nil)
        #expect(try ca.namesNotPermitted(dnsNames: ["anything.example"], ipAddresses: ["203.0.113.9"]) == [])
        _ = try ca.issueServerCertificate(dnsNames: ["anything.example"], ipAddresses: ["203.0.113.9"])
    }
}
