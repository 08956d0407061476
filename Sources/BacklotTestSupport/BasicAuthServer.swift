import BacklotBasics
import BacklotHTTPClient
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// nginx serving `file.bin` under `auth_basic "Levels"` for the user `game`, password `secret`.
public final class BasicAuthServer {
    public let dir: TemporaryDirectory
    public let port = Nginx.freePort()
    let child: ChildProcess
    public let bytes: [UInt8]
    public var url: URL { URL(string: "http://127.0.0.1:\(port)/file.bin")! }

    /// - Parameter seed: makes `file.bin`'s bytes (printed, so that a failure can be replayed).
    public init(seed: UInt64) throws {
        dir = try TemporaryDirectory("auth-nginx")
        print("BasicAuthServer: seed \(seed)")
        var g = SeededGenerator(seed: seed)
        bytes = g.bytes(200_000)
        try dir.write("root/file.bin", bytes)
        try dir.write("htpasswd", "game:{PLAIN}secret\n")
        try FileManager.default.createDirectory(atPath: dir.at("tmp"), withIntermediateDirectories: true)
        let user = getuid() == 0 ? "user root;" : ""
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
                    listen 127.0.0.1:\(port);
                    root \(dir.at("root"));
                    auth_basic "Levels";
                    auth_basic_user_file \(dir.at("htpasswd"));
                }
            }
            """)
        child = try ChildProcess.start(
            executable: "/usr/sbin/nginx",
            arguments: ["-c", dir.at("nginx.conf"), "-p", dir.path, "-e", dir.at("error.log")],
            environment: [:], captureOutput: true)
        try child.release()
        let client = HTTPClient()
        for _ in 0..<200 {
            if (try? client.send("GET", url.absoluteString))?.status == 401 { return }
            usleep(25_000)
        }
        throw BacklotError(.unavailable, "nginx did not start", context: dir.at("error.log"))
    }

    deinit {
        child.signalGroup(SIGTERM)
        _ = child.wait(until: .now + .seconds(10))
        dir.remove()
    }
}
