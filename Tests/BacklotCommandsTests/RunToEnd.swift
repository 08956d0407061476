import BacklotBasics
import Foundation

/// Runs a program to its end (at most `seconds`) and returns its exit status (nil when it was
/// killed or timed out) and its standard output and error together.
func runToEnd(
    _ executable: String, _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
    seconds: Int64 = 120
) throws -> (Int32?, String) {
    let outcome = try ChildProcess.run(
        executable: executable, arguments: arguments, environment: environment, until: .now + .seconds(seconds))
    return (outcome.exitStatus, String(decoding: outcome.output, as: UTF8.self))
}
