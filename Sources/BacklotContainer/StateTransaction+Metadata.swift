import BacklotStore

/// The `meta` table: a few named values (the device ID, the last catalog version seen, the bytes
/// of finished URL downloads, the process answering a content request).
extension StateTransaction {
    /// The value stored under `key`, if any.
    public func value(forKey key: StateKey) throws -> String? {
        try connection.query("SELECT value FROM meta WHERE key = ?", [.text(key.name)]).first?["value"]?.string
    }

    /// Stores `value` under `key`, replacing what was there.
    public func setValue(_ value: String, forKey key: StateKey) throws {
        try connection.run(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [.text(key.name), .text(value)])
    }

    /// Stores `value` under `key` only when nothing is stored there yet.
    public func setValueIfMissing(_ value: String, forKey key: StateKey) throws {
        try connection.run(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO NOTHING", [.text(key.name), .text(value)])
    }
}
