import BacklotStore

/// The `requests` table (fetches asked of the process that executes them for the container) and
/// `events` (their outcomes, each claimed once by the client that asked).
extension StateTransaction {
    /// One queued request.
    public struct QueuedRequest: Sendable, Hashable {
        public let id: Int64
        public let client: String
        public let pack: String
    }

    /// Queues a request at `created` (seconds since 1970); returns its number.
    public func enqueueRequest(client: String, pack: String, created: Int64) throws -> Int64 {
        try connection.run(
            "INSERT INTO requests(client, pack, created) VALUES (?, ?, ?)",
            [.text(client), .text(pack), .integer(created)])
        return connection.lastInsertRowID
    }

    /// Removes and returns the oldest queued request (call it in a transaction).
    public func takeOldestRequest() throws -> QueuedRequest? {
        guard let r = try connection.query("SELECT * FROM requests ORDER BY id LIMIT 1").first, let id = r["id"]?.int
        else { return nil }
        try connection.run("DELETE FROM requests WHERE id = ?", [.integer(id)])
        return QueuedRequest(id: id, client: r["client"]?.string ?? "", pack: r["pack"]?.string ?? "")
    }

    /// Removes a queued request; false when it was taken already.
    public func deleteRequest(_ id: Int64) throws -> Bool {
        try connection.run("DELETE FROM requests WHERE id = ?", [.integer(id)]) == 1
    }

    /// Records the outcome of a client's request (`detail`: the encoded outcome).
    public func postRequestOutcome(client: String, pack: String, kind: String, detail: String) throws {
        try connection.run(
            "INSERT INTO events(client, pack, kind, detail) VALUES (?, ?, ?, ?)",
            [.text(client), .text(pack), .text(kind), .text(detail)])
    }

    /// Claims the oldest undelivered outcome for a client and pack (call it in a transaction):
    /// each is returned once.
    public func claimRequestOutcome(client: String, pack: String) throws -> String? {
        guard
            let r = try connection.query(
                "SELECT * FROM events WHERE client = ? AND pack = ? AND delivered = 0 ORDER BY seq LIMIT 1",
                [.text(client), .text(pack)]
            ).first, let seq = r["seq"]?.int,
            try connection.run("UPDATE events SET delivered = 1 WHERE seq = ? AND delivered = 0", [.integer(seq)]) == 1
        else { return nil }
        return r["detail"]?.string ?? ""
    }
}
