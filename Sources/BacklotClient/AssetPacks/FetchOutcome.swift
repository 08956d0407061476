import BacklotBasics
import Foundation

/// What the container's executor posts for a fetch another process queued (the `events` table of
/// `state.sqlite`): the report of a finished install, or the message of a failure. Stored as its
/// kind (`finished`, `failed`) and its JSON, through `Codable`.
///
/// ```swift
/// try container.post(client: id, pack: "Levels", outcome: .finished(report))
/// ```
enum FetchOutcome: Sendable, Equatable, Codable {
    case finished(AssetPackManager.FetchReport)
    case failed(message: String)

    /// The `kind` column.
    var kind: String {
        switch self {
        case .finished: "finished"
        case .failed: "failed"
        }
    }

    private enum CodingKeys: String, CodingKey { case outcome, report, message }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        switch try c.decode(String.self, forKey: .outcome) {
        case "finished": self = .finished(try c.decode(AssetPackManager.FetchReport.self, forKey: .report))
        case "failed": self = .failed(message: try c.decode(String.self, forKey: .message))
        case let other:
            throw DecodingError.dataCorruptedError(
                forKey: .outcome, in: c, debugDescription: "\(other) is not finished or failed")
        }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kind, forKey: .outcome)
        switch self {
        case .finished(let report): try c.encode(report, forKey: .report)
        case .failed(let message): try c.encode(message, forKey: .message)
        }
    }

    /// The outcome as stored.
    func encoded() throws -> String {
        String(decoding: try JSONEncoder().encode(self), as: UTF8.self)
    }

    /// An outcome as stored; a record that is not one (written by another release, or damaged)
    /// is a failure that says so, so the waiting process stops waiting.
    static func decoded(_ text: String) -> FetchOutcome {
        do {
            return try JSONDecoder().decode(FetchOutcome.self, from: Data(text.utf8))
        } catch {
            return .failed(message: "the other process's outcome cannot be read (\(error))")
        }
    }
}
