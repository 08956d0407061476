import BacklotBasics
import BacklotCrypto
import BacklotRepository
import Foundation

/// `--tls auto`: a local CA and a server certificate under `DIR/tls`, made on first start and
/// reused afterwards (the server certificate is re-issued when it no longer covers the requested
/// names or has less than 30 days left).
///
/// The CA is name-constrained: it permits only the names it was made for (localhost, 127.0.0.1,
/// ::1 and the hostnames of its first start, listed in `DIR/tls/ca-names.txt`), so its key, read
/// from a backup or a compromised host, cannot impersonate other sites to the machines that trust
/// it. A later start asked for a name the CA does not permit fails rather than serve a
/// certificate clients refuse. A CA made by an earlier Backlot, without name constraints, keeps
/// working unchecked; ``caWarning`` then says how to replace it.
public struct LocalTLS: Sendable {
    public let caCertificatePath: String
    public let caFingerprint: String
    public let certificatePEM: String
    public let privateKeyPEM: String
    /// Whether anything was created on this start.
    public let created: Bool
    /// The names the CA permits (DNS names with their subdomains, then IP addresses); nil for a
    /// CA made by an earlier version without name constraints.
    public let caPermittedNames: [String]?
    /// For a CA without name constraints: what is wrong with it and how to replace it, for the
    /// caller to print. Nil for a name-constrained CA.
    public let caWarning: String?

    /// Whether the CA carries name constraints (every CA made since they were added does).
    public var caIsNameConstrained: Bool { caPermittedNames != nil }

    /// Loads or creates the CA and the server certificate for `hostnames` plus localhost, 127.0.0.1 and ::1.
    ///
    /// - Throws: `invalidInput` when the existing CA does not permit some of the names, saying
    ///   which, where the CA is and what to do (remove `DIR/tls` so a new CA is made and trusted
    ///   again, or serve another certificate with `--tls-cert`/`--tls-key`).
    public static func prepare(in directory: RepositoryDirectory, hostnames: [String]) throws -> LocalTLS {
        let dir = directory.tlsPath
        let caPath = dir + "/ca.pem"
        let caKeyPath = dir + "/ca-key.pem"
        let caNamesPath = dir + "/ca-names.txt"
        let certPath = dir + "/server.pem"
        let keyPath = dir + "/server-key.pem"
        let namesPath = dir + "/server-names.txt"
        let dns = (["localhost"] + hostnames.filter { !Self.isIPAddress($0) }).uniqued()
        let ips = (["127.0.0.1", "::1"] + hostnames.filter(Self.isIPAddress)).uniqued()
        var created = false
        let ca: LocalCertificateAuthority
        if FileSystem.exists(caPath) && FileSystem.exists(caKeyPath) {
            ca = LocalCertificateAuthority(
                certificatePEM: try String(contentsOfFile: caPath, encoding: .utf8),
                privateKeyPEM: try String(contentsOfFile: caKeyPath, encoding: .utf8))
        } else {
            ca = try LocalCertificateAuthority.create(
                commonName: "Backlot Local CA (\(ProcessInfo.processInfo.hostName))",
                permittedDNSNames: dns, permittedIPAddresses: ips)
            try RepositoryDirectory.writeSecret(ca.privateKeyPEM, to: caKeyPath)
            try RepositoryDirectory.writePublic(ca.certificatePEM, to: caPath)
            created = true
        }
        // An expired CA signs certificates that every client refuses: say which, since when, and how to renew it.
        if !created {
            let expiry = try LocalCertificateAuthority.notAfter(ofCertificate: ca.certificatePEM)
            if expiry <= Date() { throw try Self.expired(ca, path: caPath, directory: dir, at: expiry) }
        }
        // The certificate says what the CA permits; ca-names.txt is the readable copy.
        let permitted = try ca.permittedNames()
        var warning: String? = nil
        if let permitted {
            let text = permitted.joined(separator: "\n") + "\n"
            if (try? String(contentsOfFile: caNamesPath, encoding: .utf8)) != text {
                try RepositoryDirectory.writePublic(text, to: caNamesPath)
            }
            let refused = try ca.namesNotPermitted(dnsNames: dns, ipAddresses: ips)
            guard refused.isEmpty else {
                throw BacklotError(
                    .invalidInput,
                    "the local CA does not permit \(refused.joined(separator: ", ")): it permits only "
                        + "\(permitted.joined(separator: ", ")) (the DNS names with their subdomains), and "
                        + "clients refuse certificates it issues for other names",
                    context: caPath,
                    hint: "to serve these names with --tls auto, stop the server, remove \(dir) (a new CA is made "
                        + "for all the names at the next start; trust its new ca.pem again and remove the old one "
                        + "from the trust stores it was added to), or serve your own certificate with "
                        + "--tls-cert CERT.pem --tls-key KEY.pem")
            }
        } else {
            warning =
                "the local CA \(caPath) was made by an earlier Backlot without name constraints: anyone who can "
                + "read \(caKeyPath) (a backup, a compromised host) can issue certificates for any site that every "
                + "machine trusting this CA accepts. To replace it with one that permits only this server's names: "
                + "stop the server, remove the old CA from the trust stores it was added to, remove \(dir), start "
                + "again and trust the new ca.pem"
        }
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
            privateKeyPEM: try String(contentsOfFile: keyPath, encoding: .utf8), created: created,
            caPermittedNames: permitted, caWarning: warning)
    }

    /// The error of a local CA past its expiry: the file, its subject and when it expired, and the
    /// commands that make a new one (the old one must leave the trust stores too).
    static func expired(
        _ ca: LocalCertificateAuthority, path: String, directory: String, at expiry: Date
    ) throws
        -> BacklotError
    {
        let subject = try LocalCertificateAuthority.subject(ofCertificate: ca.certificatePEM)
        let when = ISO8601DateFormatter().string(from: expiry)
        return BacklotError(
            .tls,
            "the local CA \(path) (\(subject)) expired at \(when): clients refuse every certificate it signs",
            context: path,
            hint: "renew it: stop the server, run mv \(directory) \(directory).expired, and start it again with "
                + "--tls auto (a new CA is made for the same names); then trust the new \(path) wherever the old one "
                + "was trusted (BACKLOT_CA, --ca, BacklotCAFile, the system's store) and remove the old one. Or serve "
                + "your own certificate with --tls-cert CERT.pem --tls-key KEY.pem")
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
