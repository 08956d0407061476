import BacklotBasics
import BacklotCrypto
import BacklotRepository
import Foundation

/// `--tls auto`: a local CA and a server certificate under `DIR/tls`, made on first start and
/// reused afterwards (the server certificate is re-issued when it no longer covers the requested
/// names or has less than 30 days left).
public struct LocalTLS: Sendable {
    public let caCertificatePath: String
    public let caFingerprint: String
    public let certificatePEM: String
    public let privateKeyPEM: String
    /// Whether anything was created on this start.
    public let created: Bool

    /// Loads or creates the CA and the server certificate for `hostnames` plus localhost, 127.0.0.1 and ::1.
    public static func prepare(in directory: RepositoryDirectory, hostnames: [String]) throws -> LocalTLS {
        let dir = directory.tlsPath
        let caPath = dir + "/ca.pem"
        let caKeyPath = dir + "/ca-key.pem"
        let certPath = dir + "/server.pem"
        let keyPath = dir + "/server-key.pem"
        let namesPath = dir + "/server-names.txt"
        var created = false
        let ca: LocalCertificateAuthority
        if FileSystem.exists(caPath) && FileSystem.exists(caKeyPath) {
            ca = LocalCertificateAuthority(
                certificatePEM: try String(contentsOfFile: caPath, encoding: .utf8),
                privateKeyPEM: try String(contentsOfFile: caKeyPath, encoding: .utf8))
        } else {
            ca = try LocalCertificateAuthority.create(
                commonName: "Backlot Local CA (\(ProcessInfo.processInfo.hostName))")
            try RepositoryDirectory.writeSecret(ca.privateKeyPEM, to: caKeyPath)
            try RepositoryDirectory.writePublic(ca.certificatePEM, to: caPath)
            created = true
        }
        let dns = (["localhost"] + hostnames.filter { !Self.isIPAddress($0) }).uniqued()
        let ips = (["127.0.0.1", "::1"] + hostnames.filter(Self.isIPAddress)).uniqued()
        let names = (dns + ips).joined(separator: "\n")
        let current = (try? String(contentsOfFile: namesPath, encoding: .utf8)) == names
        let expiring =
            (try? String(contentsOfFile: certPath, encoding: .utf8)).flatMap {
                try? LocalCertificateAuthority.notAfter(ofCertificate: $0)
            }
            .map { $0 < Date().addingTimeInterval(30 * 86_400) } ?? true
        if created || !current || expiring || !FileSystem.exists(keyPath) {
            let issued = try ca.issueServerCertificate(dnsNames: dns, ipAddresses: ips)
            try RepositoryDirectory.writeSecret(issued.privateKeyPEM, to: keyPath)
            try RepositoryDirectory.writePublic(issued.certificatePEM, to: certPath)
            try RepositoryDirectory.writePublic(names, to: namesPath)
            created = true
        }
        return LocalTLS(
            caCertificatePath: caPath,
            caFingerprint: try LocalCertificateAuthority.fingerprint(ofCertificate: ca.certificatePEM),
            certificatePEM: try String(contentsOfFile: certPath, encoding: .utf8) + ca.certificatePEM,
            privateKeyPEM: try String(contentsOfFile: keyPath, encoding: .utf8), created: created)
    }

    static func isIPAddress(_ s: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, s, &v4) == 1 || inet_pton(AF_INET6, s, &v6) == 1
    }
}

extension Array where Element: Hashable {
    func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}

#if canImport(Glibc)
import Glibc
#endif
