import BacklotAgent
import BacklotBasics
import BacklotClient
import BacklotExtension
import BacklotTaskScheduler
import BacklotTestSupport
import Foundation
import Synchronization

/// A real server with published packs, a container, a configuration file and the helper executables.
final class AgentFixture: @unchecked Sendable {
    let server: ClientFixture
    let container: String
    let conditions = ManualConditions()
    let lines = LogLines()

    static let essential = #"{"essential": {"installationEventTypes": ["firstInstallation", "subsequentUpdate"]}}"#
    static let prefetch = #"{"prefetch": {"installationEventTypes": ["firstInstallation"]}}"#
    static let updateOnly = #"{"prefetch": {"installationEventTypes": ["subsequentUpdate"]}}"#

    /// - Parameter container: where the device container is (default: a folder of the fixture's).
    init(container: String? = nil) throws {
        server = try ClientFixture()
        self.container = container ?? server.dir.at("device")
        try FileManager.default.createDirectory(atPath: self.container, withIntermediateDirectories: true)
    }

    /// The folder holding the built executables (`backlot`, the test extension and app).
    static var binaries: String {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path,
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
                .appendingPathComponent(".build/debug").path,
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0 + "/backlot-test-extension") }
            ?? candidates[1]
    }

    /// Writes the JSON configuration with these extra keys and returns its path.
    @discardableResult
    func writeConfig(
        _ extra: [String: Any] = [:], withExtension: Bool = true, name: String = "agent.json"
    ) throws -> String {
        try FileManager.default.copyItem(
            atPath: server.repository.directory.publicKeyPath, toPath: server.dir.at("root-\(name).pub"))
        var config: [String: Any] = [
            "BacklotCatalogURL": server.catalogURL().absoluteString,
            "BacklotTrustedKey": "root-\(name).pub",
            "BacklotPollInterval": 0.1,
            "BacklotExtensionTimeLimit": 20,
        ]
        if withExtension { config["BacklotExtensionPath"] = Self.binaries + "/backlot-test-extension" }
        for (k, v) in extra { config[k] = v }
        let data = try JSONSerialization.data(withJSONObject: config, options: [.prettyPrinted, .sortedKeys])
        let path = server.dir.at(name)
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    func extensionSettings(_ settings: [String: Any]) throws {
        try JSONSerialization.data(withJSONObject: settings).write(
            to: URL(fileURLWithPath: container + "/test-extension.json"))
    }

    func agent(config: String? = nil) throws -> Agent {
        let path = try config ?? writeConfig()
        return try Agent(
            containerPath: container, configuration: AgentConfiguration(path: path, containerPath: container),
            conditions: conditions, log: { [lines] l in lines.add(l) })
    }

    var extensionLog: [String] {
        ((try? String(contentsOfFile: container + "/test-extension.log", encoding: .utf8)) ?? "").split(separator: "\n")
            .map(String.init)
    }

    var appLog: [String] {
        ((try? String(contentsOfFile: container + "/test-app.log", encoding: .utf8)) ?? "").split(separator: "\n").map(
            String.init)
    }

    func installed() throws -> [String] { try ClientContainer(path: container).installed().map(\.id) }
}

final class LogLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func add(_ l: String) {
        lock.lock()
        lines.append(l)
        lock.unlock()
    }
    var all: [String] {
        lock.lock()
        defer { lock.unlock() }
        return lines
    }
}
