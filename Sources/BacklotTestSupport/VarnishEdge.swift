import BacklotBasics
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Debian's Varnish running the project's own `contrib/varnish/edge.vcl` in front of an origin
/// (`backlot serve`, or an S3 bucket holding the published tree): the second CDN-style edge,
/// tested as the nginx one is (``EdgeCache``).
///
/// ```swift
/// let edge = try VarnishEdge(originPort: server.port, originPath: "", workDirectory: dir.at("varnish"))
/// defer { edge.stop() }
/// // clients use edge.baseURL + "v1/apps/APP/CHANNEL/catalog.json"
/// ```
public final class VarnishEdge: Sendable {
    public let port: UInt16
    /// varnishd, in a process group of its own with a clean signal mask (``ChildProcess``): started
    /// from a test process, whose threads block SIGTERM, a child made by Foundation's `Process`
    /// would inherit the block and never stop.
    public let process: ChildProcess
    public let directory: String

    /// `http://127.0.0.1:PORT/`.
    public var baseURL: String { "http://127.0.0.1:\(port)/" }

    /// The VCL shipped in the repository.
    public static let configurationTemplate = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("contrib/varnish/edge.vcl").path

    /// Renders `contrib/varnish/edge.vcl` for the origin, starts `varnishd` in the foreground on a
    /// port from ``FreePort`` (its own instance folder, 64 MiB of memory storage, no jail: it runs
    /// as whoever runs the tests), and waits until it listens.
    /// - Throws: ``Requirement/Missing`` without varnish; what varnishd printed when it does not start.
    public init(originPort: UInt16, originPath: String, workDirectory: String) throws {
        let varnishd = try Requirement.varnish.path()
        directory = workDirectory
        try FileManager.default.createDirectory(atPath: workDirectory, withIntermediateDirectories: true)
        let vcl = workDirectory + "/edge.vcl"
        try String(contentsOfFile: Self.configurationTemplate, encoding: .utf8)
            .replacingOccurrences(of: "@ORIGIN_HOST@", with: "127.0.0.1")
            .replacingOccurrences(of: "@ORIGIN_PORT@", with: String(originPort))
            .replacingOccurrences(of: "@ORIGIN_PATH@", with: originPath)
            .write(toFile: vcl, atomically: true, encoding: .utf8)
        (port, process) = try FreePort.starting("the Varnish edge") { port in
            let child = try ChildProcess.start(
                executable: varnishd,
                arguments: [
                    "-F", "-j", "none", "-n", workDirectory + "/instance", "-a", "127.0.0.1:\(port)", "-f", vcl,
                    "-s", "malloc,64m", "-T", "none",
                ],
                environment: ProcessInfo.processInfo.environment, captureOutput: true)
            try child.release()
            do {
                try Wait.until("varnishd listens on 127.0.0.1:\(port)", timeout: .seconds(30)) {
                    child.hasExited || Nginx.accepts(port)
                }
            } catch {
                child.signalGroup(SIGKILL)
                _ = child.wait(until: .now + .seconds(5))
                throw error
            }
            if child.hasExited {
                let text = String(decoding: child.wait(until: .now + .seconds(5)).output, as: UTF8.self)
                if FreePort.saysAddressInUse(text) {
                    throw FreePort.InUse(port: port, detail: String(text.suffix(500)))
                }
                throw BacklotError(.io, "varnishd ended at its start: \(text.suffix(2000))", context: vcl)
            }
            return (port, child)
        }
    }

    /// Stops varnishd (SIGTERM to its group; what is left after 10 s is killed) and reaps it.
    public func stop() {
        process.signalGroup(SIGTERM)
        _ = process.wait(until: .now + .seconds(10))
    }
}
