/// An error from any part of Backlot: a stable code, a message that says what is wrong,
/// where, and what to do about it.
///
/// Errors are values, never bare strings. The ``code`` is stable across releases and is what
/// programs match on; the ``message`` is for people. ``context`` names the thing that is wrong
/// (a file, a JSON path, a chunk, an offset) and ``hint`` says how to fix it.
///
/// ```swift
/// do {
///     try PackReader(path: "game.pack").verify()
/// } catch let error as BacklotError where error.code == .corruptArchive {
///     print(error.description)   // "game.pack: chunk 12 at offset 80123: ..."
/// }
/// ```
public struct BacklotError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is. Programs match on codes, never on messages.
    public let code: Code
    /// What went wrong, in one sentence.
    public let message: String
    /// Where it went wrong: a path, a JSON path with line and column, a chunk index.
    public let context: String?
    /// What to do about it.
    public let hint: String?
    /// Seconds a server asked to be left alone before the next try (its `Retry-After` on a 503 or
    /// 429), for ``Code/unavailable``; nil when it named none.
    public let retryAfter: Int?

    public init(_ code: Code, _ message: String, context: String? = nil, hint: String? = nil, retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.context = context
        self.hint = hint
        self.retryAfter = retryAfter
    }

    /// `context: message (hint)`, the form printed by the command-line tool.
    public var description: String {
        var text = context.map { "\($0): \(message)" } ?? message
        if let hint { text += "\n  hint: \(hint)" }
        return text
    }

    /// The process exit status this error maps to: 2 for usage and invalid input, 1 otherwise.
    public var exitStatus: Int32 { code.isInvalidInput ? 2 : 1 }
}

extension BacklotError {
    /// A stable, extensible error code.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The code's stable name, such as `invalidManifest`.
        public let name: String
        /// Whether the caller gave something invalid (exit status 2) rather than a failure of the operation (1).
        public let isInvalidInput: Bool

        public init(_ name: String, isInvalidInput: Bool) {
            self.name = name
            self.isInvalidInput = isInvalidInput
        }

        public var description: String { name }

        /// Unknown command, option or missing argument.
        public static let usage = Code("usage", isInvalidInput: true)
        /// The manifest breaks a rule of the schema.
        public static let invalidManifest = Code("invalidManifest", isInvalidInput: true)
        /// A file is not well-formed JSON.
        public static let invalidJSON = Code("invalidJSON", isInvalidInput: true)
        /// A pack identifier breaks the `PackID` rule.
        public static let invalidPackID = Code("invalidPackID", isInvalidInput: true)
        /// What the selectors point at cannot be packaged (missing, special file, symlink out of root, …).
        public static let invalidSource = Code("invalidSource", isInvalidInput: true)
        /// An input file is not what the command expects (not a pack, wrong version, …).
        public static let invalidInput = Code("invalidInput", isInvalidInput: true)
        /// An archive fails verification: truncated, altered or crafted.
        public static let corruptArchive = Code("corruptArchive", isInvalidInput: false)
        /// An operating-system call failed.
        public static let io = Code("io", isInvalidInput: false)
        /// A destination exists and would be overwritten.
        public static let alreadyExists = Code("alreadyExists", isInvalidInput: true)
        /// A library call failed (zstd, OpenSSL).
        public static let library = Code("library", isInvalidInput: false)
        /// A check ran and found problems (the problems were printed).
        public static let checkFailed = Code("checkFailed", isInvalidInput: false)
        /// Signed metadata failed verification (bad or missing signature, expired, rolled back, for another app).
        public static let untrusted = Code("untrusted", isInvalidInput: false)
        /// The thing exists already, or changed meanwhile (HTTP 409).
        public static let conflict = Code("conflict", isInvalidInput: true)
        /// Not found (HTTP 404).
        public static let notFound = Code("notFound", isInvalidInput: true)
        /// Not allowed for this caller (HTTP 401/403).
        public static let forbidden = Code("forbidden", isInvalidInput: true)
        /// Over a quota (HTTP 413).
        public static let quotaExceeded = Code("quotaExceeded", isInvalidInput: true)
        /// The operation was cancelled.
        public static let cancelled = Code("cancelled", isInvalidInput: false)
        /// The server's signed catalog is older than one this client already trusted (a CDN edge
        /// serving an old copy, or a replay): the installed release is kept and the check is tried
        /// again later; nothing is installed from it.
        public static let staleCatalog = Code("staleCatalog", isInvalidInput: false)
        /// A service Backlot depends on (the metadata database, the object store) cannot be
        /// reached now; trying again later can work (HTTP 503 with `Retry-After`).
        public static let unavailable = Code("unavailable", isInvalidInput: false)
        /// A TLS connection could not be verified (the server's certificate is not trusted, has
        /// expired or names another host): a problem of trust to fix, not of the network.
        public static let tls = Code("tls", isInvalidInput: false)
    }
}
