import BacklotBasics
import BacklotCrypto
import BacklotHTTPClient
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// nginx serving `file.bin` (seeded bytes) on loopback: under `auth_basic "Levels"` for the user
/// `game`, password `secret` (by default), and over TLS with a given certificate and key.
public final class NginxFileServer {
    public let dir: TemporaryDirectory
    public let port: UInt16
    public let bytes: [UInt8]
    public let isTLS: Bool
    public var url: URL { URL(string: "\(isTLS ? "https" : "http")://127.0.0.1:\(port)/file.bin")! }

    /// - Parameters:
    ///   - seed: makes `file.bin`'s bytes (printed, so that a failure can be replayed).
    ///   - basicAuth: whether a user and password are required.
    ///   - tls: the server's certificate and key (PEM), for HTTPS.
    public init(seed: UInt64, basicAuth: Bool = true, tls: LocalCertificateAuthority.Issued? = nil) throws {
        dir = try TemporaryDirectory("auth-nginx")
        isTLS = tls != nil
        print("NginxFileServer: seed \(seed)")
        var g = SeededGenerator(seed: seed)
        bytes = g.bytes(200_000)
        try dir.write("root/file.bin", bytes)
        try dir.write("htpasswd", "game:{PLAIN}secret\n")
        if let tls {
            try dir.write("cert.pem", tls.certificatePEM)
            try dir.write("key.pem", tls.privateKeyPEM, mode: 0o600)
        }
        _ = try Requirement.nginx.path()
        let user = getuid() == 0 ? "user root;" : ""
        let dir = self.dir
        let template = dir.at("nginx-template.conf")
        try dir.write(
            "nginx-template.conf",
            """
            \(user)
            events { worker_connections 16; }
            http {
                access_log off;
                \(Nginx.temporaryPaths)
                server {
                    listen @LISTEN@\(isTLS ? " ssl" : "");
                    root \(dir.at("root"));
                    \(basicAuth ? "auth_basic \"Levels\"; auth_basic_user_file \(dir.at("htpasswd"));" : "")
                    \(tls == nil ? "" : "ssl_certificate \(dir.at("cert.pem")); ssl_certificate_key \(dir.at("key.pem"));")
                }
            }
            """)
        // Started and stopped as every nginx of the tests is (``Nginx/start(in:template:port:)``).
        port = try FreePort.starting("nginx") { port in
            try Nginx.start(in: dir.path, template: template, port: port)
            return port
        }
    }

    deinit {
        Nginx.stop(in: dir.path)
        dir.remove()
    }
}
