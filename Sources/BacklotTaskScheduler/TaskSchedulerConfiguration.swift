import BacklotBasics
import BacklotInfoPlist
import Foundation

/// What the scheduler allows and how long tasks may run.
///
/// Read from an app's Info.plist or Backlot's JSON configuration (the same keys in both):
///
/// | key | type | default |
/// |---|---|---|
/// | `BGTaskSchedulerPermittedIdentifiers` | array of strings | none permitted |
/// | `BacklotRefreshTaskBudget` | seconds | 30 |
/// | `BacklotProcessingTaskBudget` | seconds | 300 |
/// | `BacklotTaskExpirationGrace` | seconds after the expiration handler before a task is killed | 5 |
/// | `BacklotTaskFailureBackoff` | seconds held back after a failure, doubled per failure in a row (at most a day) | 60 |
/// | `BacklotIsAppClip` | boolean: background tasks are unavailable | false |
public struct TaskSchedulerConfiguration: Sendable {
    public var permittedIdentifiers: Set<String>
    public var refreshBudget: TimeInterval = 30
    public var processingBudget: TimeInterval = 300
    public var expirationGrace: TimeInterval = 5
    public var failureBackoff: TimeInterval = 60
    /// App Clips have no background tasks: registering returns false and submitting throws `unavailable`.
    public var isAppClip = false
    /// Where pending requests and the task history are kept (nil: in memory, lost at exit).
    public var databasePath: String?

    public init(permittedIdentifiers: Set<String>, databasePath: String? = nil) {
        self.permittedIdentifiers = permittedIdentifiers
        self.databasePath = databasePath
    }

    /// The keys this configuration reads.
    public static let keys = [
        "BGTaskSchedulerPermittedIdentifiers", "BacklotRefreshTaskBudget", "BacklotProcessingTaskBudget",
        "BacklotTaskExpirationGrace", "BacklotTaskFailureBackoff", "BacklotIsAppClip",
    ]

    /// Reads the keys from a configuration dictionary (an Info.plist or Backlot's JSON).
    /// - Throws: ``BacklotError/Code/invalidInput`` naming the key and what it must hold.
    public init(settings: [String: PlistValue], source: String, databasePath: String? = nil) throws {
        var permitted = Set<String>()
        if let value = settings["BGTaskSchedulerPermittedIdentifiers"] {
            guard let array = value.array else {
                throw ConfigurationKey.error(
                    "BGTaskSchedulerPermittedIdentifiers", source: source,
                    "must be an array of strings, not \(value.typeName)")
            }
            for (i, v) in array.enumerated() {
                guard let s = v.string, !s.isEmpty else {
                    throw ConfigurationKey.error(
                        "BGTaskSchedulerPermittedIdentifiers[\(i)]", source: source,
                        "must be a non-empty string, not \(v.typeName)")
                }
                permitted.insert(s)
            }
        }
        self.init(permittedIdentifiers: permitted, databasePath: databasePath)
        refreshBudget =
            try ConfigurationKey.seconds("BacklotRefreshTaskBudget", in: settings, source: source) ?? refreshBudget
        processingBudget =
            try ConfigurationKey.seconds("BacklotProcessingTaskBudget", in: settings, source: source)
            ?? processingBudget
        expirationGrace =
            try ConfigurationKey.seconds("BacklotTaskExpirationGrace", in: settings, source: source) ?? expirationGrace
        failureBackoff =
            try ConfigurationKey.seconds("BacklotTaskFailureBackoff", in: settings, source: source) ?? failureBackoff
        isAppClip = try ConfigurationKey.bool("BacklotIsAppClip", in: settings, source: source) ?? false
    }

    func budget(_ kind: TaskKind) -> TimeInterval { kind == .refresh ? refreshBudget : processingBudget }
}

/// Typed reads of configuration keys, with errors that name the key.
public enum ConfigurationKey {
    public static func error(_ key: String, source: String, _ message: String) -> BacklotError {
        BacklotError(.invalidInput, "the key \(key) \(message)", context: source, hint: "fix \(key) in \(source)")
    }

    /// The most seconds a duration key may hold: one year. Larger values (`1e30`, `2^64`, an
    /// overflowed `1e400`) are refused, so that every later use (a log line, a deadline, a
    /// back-off that doubles) stays in range.
    public static let maximumSeconds: TimeInterval = 366 * 86_400

    /// A duration: a positive number of seconds, at most ``maximumSeconds`` (an integer or a real),
    /// and at least `minimum` when given (a key whose tiny value would make a loop of the agent spin).
    /// - Throws: ``BacklotError/Code/invalidInput`` naming the key and the value.
    public static func seconds(
        _ key: String, in settings: [String: PlistValue], source: String, atLeast minimum: TimeInterval? = nil
    ) throws -> TimeInterval? {
        guard let v = settings[key] else { return nil }
        let n: Double? =
            switch v {
            case .integer(let i): Double(i)
            case .unsignedInteger(let u): Double(u)
            case .real(let r): r
            default: nil
            }
        let limit = CheckedInteger.secondsText(maximumSeconds)
        guard let n else {
            throw error(
                key, source: source,
                "must be a positive number of seconds (at most \(limit)), not \(v.typeName == "a string" ? "the string \"\(v.string ?? "")\"" : v.typeName)"
            )
        }
        guard n.isFinite, n > 0, n <= maximumSeconds else {
            let shown: String =
                switch v {
                case .integer(let i): "\(i)"
                case .unsignedInteger(let u): "\(u)"
                default: n.isFinite ? "\(n)" : "a number too large to hold"
                }
            throw error(
                key, source: source, "must be a positive number of seconds, at most \(limit) (a year), not \(shown)")
        }
        if let minimum, n < minimum {
            throw error(
                key, source: source,
                "must be at least \(CheckedInteger.secondsText(minimum)) seconds (the agent would loop without rest), not \(n)"
            )
        }
        return n
    }

    /// A size: a whole number of bytes in `0…Int64.max` (what SQLite and `off_t` hold).
    /// - Throws: ``BacklotError/Code/invalidInput`` naming the key and the value: negative,
    ///   fractional, too large (`2^64`, `1e30`, an overflowed `1e400`) or not a number.
    public static func bytes(_ key: String, in settings: [String: PlistValue], source: String) throws -> UInt64? {
        guard let v = settings[key] else { return nil }
        let range: ClosedRange<UInt64> = 0...UInt64(Int64.max)
        switch v {
        case .integer(let i):
            return try CheckedInteger.convert(i, to: UInt64.self, "the key \(key)", in: range, context: source)
        case .unsignedInteger(let u):
            return try CheckedInteger.convert(u, to: UInt64.self, "the key \(key)", in: range, context: source)
        case .real(let r):
            throw error(
                key, source: source,
                "must be a whole number of bytes from 0 to \(Int64.max), not \(r.isFinite ? "the real number \(r)" : "a number too large to hold")"
            )
        default:
            throw error(
                key, source: source, "must be a whole number of bytes from 0 to \(Int64.max), not \(v.typeName)")
        }
    }

    public static func bool(_ key: String, in settings: [String: PlistValue], source: String) throws -> Bool? {
        guard let v = settings[key] else { return nil }
        guard case .bool(let b) = v else {
            throw error(key, source: source, "must be a boolean (true or false), not \(v.typeName)")
        }
        return b
    }

    public static func string(_ key: String, in settings: [String: PlistValue], source: String) throws -> String? {
        guard let v = settings[key] else { return nil }
        guard let s = v.string, !s.isEmpty else {
            throw error(key, source: source, "must be a non-empty string, not \(v.typeName)")
        }
        return s
    }
}
