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
    let child: ChildProcess
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
        (port, child) = try FreePort.starting("nginx") { port in
            try dir.write(
                "nginx.conf",
                """
                daemon off;
                master_process off;
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
            try? FileManager.default.removeItem(atPath: dir.at("error.log"))
            let child = try ChildProcess.start(
                executable: nginx, arguments: ["-c", dir.at("nginx.conf"), "-p", dir.path, "-e", dir.at("error.log")],
                environment: [:], captureOutput: true)
            try child.release()
            let log = { (try? String(contentsOfFile: dir.at("error.log"), encoding: .utf8)) ?? "" }
            // Up when it answers (what it answers does not matter: its certificate is not trusted here).
            let url = "\(isTLS ? "https" : "http")://127.0.0.1:\(port)/file.bin"
            var ended = false
            do {
                try Wait.until("nginx answers at \(url)", timeout: .seconds(20), poll: .milliseconds(25), detail: log) {
                    if Self.hasEnded(child.pid) {
                        ended = true
                        return true
                    }
                    if isTLS { return (try? HTTPClient().serverCertificates(of: url)) != nil }
                    return (try? HTTPClient().send("GET", url)) != nil
                }
            } catch {
                child.signalGroup(SIGTERM)
                _ = child.wait(until: .now + .seconds(10))
                throw error
            }
            guard ended else { return (port, child) }
            let outcome = child.wait(until: .now + .seconds(10))
            let text = log() + String(decoding: outcome.output, as: UTF8.self)
            if FreePort.saysAddressInUse(text) { throw FreePort.InUse(port: port, detail: String(text.suffix(500))) }
            throw BacklotError(.unavailable, "nginx did not start: \(text.suffix(2000))", context: dir.at("error.log"))
        }
    }

    /// Whether process `pid` has ended (a zombie counts as ended).
    static func hasEnded(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return true }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }

    deinit {
        child.signalGroup(SIGTERM)
        _ = child.wait(until: .now + .seconds(10))
        dir.remove()
    }
}
