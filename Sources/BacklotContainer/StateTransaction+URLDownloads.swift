import BacklotStore

/// The URL downloads' tables: `url_downloads` (scheduled, not finished; each declared size
/// reserves room under the install-size caps), `url_retries` (paused after a failed connection)
/// and `url_events` (outcomes, delivered once to the app or the extension).
extension StateTransaction {
    // MARK: Scheduled

    /// Schedules a download at `created` (seconds since 1970).
    /// - Throws: ``BacklotError/Code/conflict`` when its identifier is scheduled already.
    public func scheduleURLDownload(_ d: URLDownloadRecord, created: Int64) throws {
        try connection.run(
            "INSERT INTO url_downloads(identifier, url, file_size, essential, priority, created) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .text(d.identifier), .text(d.url), d.fileSize.map { .integer($0) } ?? .null,
                .integer(d.essential ? 1 : 0), .integer(d.priority), .integer(created),
            ])
    }

    /// The scheduled downloads, highest priority first, then oldest first.
    public func scheduledURLDownloads() throws -> [URLDownloadRecord] {
        try connection.query("SELECT * FROM url_downloads ORDER BY priority DESC, created").map(Self.download)
    }

    /// Unschedules a download; false when it was not scheduled.
    @discardableResult
    public func unscheduleURLDownload(_ identifier: String) throws -> Bool {
        try connection.run("DELETE FROM url_downloads WHERE identifier = ?", [.text(identifier)]) == 1
    }

    /// The declared sizes of the scheduled downloads of one kind (essential or not), except `excluding`'s.
    public func reservedURLDownloadSizes(essential: Bool, excluding: String?) throws -> [Int64] {
        try connection.query(
            "SELECT file_size FROM url_downloads WHERE essential = ? AND file_size IS NOT NULL AND identifier != ?",
            [.integer(essential ? 1 : 0), .text(excluding ?? "")]
        ).compactMap { $0["file_size"]?.int }
    }

    // MARK: Paused

    /// The paused downloads whose next attempt is after `now` (seconds since 1970).
    public func pausedURLDownloads(retryingAfter now: Double) throws -> [String] {
        try connection.query("SELECT identifier FROM url_retries WHERE retry_after > ?", [.real(now)]).compactMap {
            $0["identifier"]?.string
        }
    }

    /// How many times in a row a download was paused (0 when it is not).
    public func pauseCount(_ identifier: String) throws -> Int64 {
        try connection.query("SELECT attempts FROM url_retries WHERE identifier = ?", [.text(identifier)]).first?[
            "attempts"]?.int ?? 0
    }

    /// Pauses a download until `retryAfter` (seconds since 1970), the `attempts`-th time in a row.
    public func pauseURLDownload(_ identifier: String, attempts: Int64, retryAfter: Double) throws {
        try connection.run(
            """
            INSERT INTO url_retries(identifier, attempts, retry_after) VALUES (?, ?, ?)
            ON CONFLICT(identifier) DO UPDATE SET attempts = excluded.attempts, retry_after = excluded.retry_after
            """,
            [.text(identifier), .integer(attempts), .real(retryAfter)])
    }

    /// Forgets a download's pauses.
    public func clearPauses(_ identifier: String) throws {
        try connection.run("DELETE FROM url_retries WHERE identifier = ?", [.text(identifier)])
    }

    // MARK: Outcomes

    /// Records an outcome; returns its number.
    public func recordURLOutcome(
        _ d: URLDownloadRecord, kind: String, path: String?, staged: String?, message: String?, code: Int64?,
        state: URLOutcomeState, owner: String
    ) throws -> Int64 {
        try connection.run(
            """
            INSERT INTO url_events(identifier, url, file_size, essential, priority, kind, path, message, code, delivered, staged, owner)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(d.identifier), .text(d.url), d.fileSize.map { .integer($0) } ?? .null,
                .integer(d.essential ? 1 : 0), .integer(d.priority), .text(kind), path.map { .text($0) } ?? .null,
                message.map { .text($0) } ?? .null, code.map { .integer($0) } ?? .null, .integer(state.rawValue),
                staged.map { .text($0) } ?? .null, .text(owner),
            ])
        return connection.lastInsertRowID
    }

    /// Outcome `seq`, if it exists.
    public func urlOutcome(_ seq: Int64) throws -> URLOutcomeRecord? {
        try connection.query("SELECT * FROM url_events WHERE seq = ?", [.integer(seq)]).first.flatMap(Self.outcome)
    }

    /// The outcomes of one download whose file is still to be renamed from its partial file.
    public func stagedURLOutcomes(of identifier: String) throws -> [URLOutcomeRecord] {
        try connection.query(
            "SELECT * FROM url_events WHERE identifier = ? AND staged IS NOT NULL ORDER BY seq", [.text(identifier)]
        ).compactMap(Self.outcome)
    }

    /// The outcomes in `state` (recorded by `owner`, if given), oldest first.
    public func urlOutcomes(in state: URLOutcomeState, recordedBy owner: String? = nil) throws -> [URLOutcomeRecord] {
        let rows =
            if let owner {
                try connection.query(
                    "SELECT * FROM url_events WHERE delivered = ? AND owner = ? ORDER BY seq",
                    [.integer(state.rawValue), .text(owner)])
            } else {
                try connection.query(
                    "SELECT * FROM url_events WHERE delivered = ? ORDER BY seq", [.integer(state.rawValue)])
            }
        return rows.compactMap(Self.outcome)
    }

    /// The file of outcome `seq` was renamed into place (or lost): it is staged no more.
    public func clearStaging(_ seq: Int64) throws {
        try connection.run("UPDATE url_events SET staged = NULL WHERE seq = ?", [.integer(seq)])
    }

    /// Turns outcome `seq` into a failure without a file, saying why.
    public func markURLOutcomeFailed(_ seq: Int64, message: String) throws {
        try connection.run(
            "UPDATE url_events SET kind = 'failed', path = NULL, message = ? WHERE seq = ?",
            [.text(message), .integer(seq)])
    }

    /// Moves outcome `seq` to `state` if it is in one of `from`; false when it was not.
    @discardableResult
    public func moveURLOutcome(_ seq: Int64, to state: URLOutcomeState, from: [URLOutcomeState]) throws -> Bool {
        guard !from.isEmpty else { return false }
        let marks = Array(repeating: "?", count: from.count).joined(separator: ", ")
        return try connection.run(
            "UPDATE url_events SET delivered = ? WHERE seq = ? AND delivered IN (\(marks))",
            [.integer(state.rawValue), .integer(seq)] + from.map { .integer($0.rawValue) }) == 1
    }

    /// Moves every outcome in `from` (only `seq`, if given) to `state`.
    public func moveURLOutcomes(from: URLOutcomeState, to state: URLOutcomeState, only seq: Int64? = nil) throws {
        if let seq {
            try connection.run(
                "UPDATE url_events SET delivered = ? WHERE delivered = ? AND seq = ?",
                [.integer(state.rawValue), .integer(from.rawValue), .integer(seq)])
        } else {
            try connection.run(
                "UPDATE url_events SET delivered = ? WHERE delivered = ?",
                [.integer(state.rawValue), .integer(from.rawValue)])
        }
    }

    /// Claims the oldest outcome in `from`, moving it to `state` (call it in a transaction): each is claimed once.
    public func claimOldestURLOutcome(
        in from: URLOutcomeState, movingTo state: URLOutcomeState
    ) throws
        -> URLOutcomeRecord?
    {
        guard
            let r = try connection.query(
                "SELECT * FROM url_events WHERE delivered = ? ORDER BY seq LIMIT 1", [.integer(from.rawValue)]
            ).first,
            let outcome = Self.outcome(r), try moveURLOutcome(outcome.seq, to: state, from: [from])
        else { return nil }
        return outcome
    }

    static func download(_ r: Database.Row) -> URLDownloadRecord {
        URLDownloadRecord(
            identifier: r["identifier"]?.string ?? "", url: r["url"]?.string ?? "", fileSize: r["file_size"]?.int,
            essential: r["essential"]?.int == 1, priority: r["priority"]?.int ?? 0)
    }

    /// A row read back (another process may have written it); only a row without a number is skipped.
    static func outcome(_ r: Database.Row) -> URLOutcomeRecord? {
        guard let seq = r["seq"]?.int else { return nil }
        return URLOutcomeRecord(
            seq: seq, download: download(r), kind: r["kind"]?.string ?? "", path: r["path"]?.string,
            message: r["message"]?.string, code: r["code"]?.int,
            state: r["delivered"]?.int.flatMap(URLOutcomeState.init(rawValue:)), staged: r["staged"]?.string,
            owner: r["owner"]?.string ?? "")
    }
}
