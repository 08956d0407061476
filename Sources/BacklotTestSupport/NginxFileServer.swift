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
    let process: Process
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
        try FileManager.default.createDirectory(atPath: dir.at("tmp"), withIntermediateDirectories: true)
        if let tls {
            try dir.write("cert.pem", tls.certificatePEM)
            try dir.write("key.pem", tls.privateKeyPEM, mode: 0o600)
        }
        let nginx = try Requirement.nginx.path()
        let user = getuid() == 0 ? "user root;" : ""
        let dir = self.dir
        let isTLS = self.isTLS
        (port, process) = try FreePort.starting("nginx") { port in
            try dir.write(
                "nginx.conf",
                """
                daemon off;
                \(user)
                pid \(dir.at("nginx.pid"));
                error_log \(dir.at("error.log"));
                events { worker_connections 16; }
                http {
                    access_log off;
                    client_body_temp_path \(dir.at("tmp"));
                    proxy_temp_path \(dir.at("tmp"));
                    fastcgi_temp_path \(dir.at("tmp"));
                    scgi_temp_path \(dir.at("tmp"));
                    uwsgi_temp_path \(dir.at("tmp"));
                    server {
                        listen 127.0.0.1:\(port)\(isTLS ? " ssl" : "");
                        root \(dir.at("root"));
                        \(basicAuth ? "auth_basic \"Levels\"; auth_basic_user_file \(dir.at("htpasswd"));" : "")
                        \(tls == nil ? "" : "ssl_certificate \(dir.at("cert.pem")); ssl_certificate_key \(dir.at("key.pem"));")
                    }
                }
                """)
            // Started and waited for as every nginx of the tests is (``Nginx/start``).
            let process = try Nginx.start(
                nginx, ["-c", dir.at("nginx.conf"), "-p", dir.path, "-e", dir.at("error.log")], port: port,
                errorLog: dir.at("error.log"), pidFile: dir.at("nginx.pid"))
            return (port, process)
        }
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
        dir.remove()
    }
}
