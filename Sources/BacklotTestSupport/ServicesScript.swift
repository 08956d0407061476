import BacklotBasics
import Foundation

/// `scripts/services`, the one way the tests, the demo and the benchmarks start the scale-out
/// engines (radosgw, PostgreSQL): run with its output captured, in a process group of its own (the
/// daemons it starts write to their folder's logs, never to this pipe).
///
/// ```swift
/// try ServicesScript.run(["start", "postgres", folder, "--owner", String(getpid()), "--remove"], folder: folder)
/// let values = try ServicesScript.environment(of: folder)   // ["BACKLOT_POSTGRES_PORT": "12345", …]
/// ```
public enum ServicesScript {
    /// The repository's `scripts/services`.
    public static let path: String = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/services").path

    /// Runs `scripts/services ARGS` for at most 5 minutes and returns what it printed.
    /// - Throws: ``BacklotError/Code/io`` with what it printed when it fails.
    @discardableResult
    public static func run(_ arguments: [String], folder: String) throws -> String {
        let child = try ChildProcess.start(
            executable: path, arguments: arguments, environment: ProcessInfo.processInfo.environment,
            captureOutput: true)
        try child.release()
        let outcome = child.wait(until: .now + .seconds(300), keepingLast: 1 << 20)
        let printed = String(decoding: outcome.output, as: UTF8.self)
        guard outcome.succeeded else {
            throw BacklotError(
                .io,
                "scripts/services \(arguments.joined(separator: " ")) failed (\(outcome.exitStatus.map { "exit \($0)" } ?? "killed")): \(printed)",
                context: folder,
                hint:
                    "the services' logs are in \(folder) (log/, postgres/log); missing packages: run scripts/bootstrap")
        }
        return printed
    }

    /// The `NAME=VALUE` lines `scripts/services env FOLDER` prints, as a dictionary.
    public static func environment(of folder: String) throws -> [String: String] {
        var values: [String: String] = [:]
        for line in try run(["env", folder], folder: folder).split(separator: "\n") {
            if let eq = line.firstIndex(of: "=") {
                values[String(line[..<eq])] = String(line[line.index(after: eq)...])
            }
        }
        return values
    }
}
