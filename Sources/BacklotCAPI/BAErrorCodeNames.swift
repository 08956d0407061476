import BacklotClient

/// The names of Apple's `BAErrorCode` values in `backlot_status_name` (`BACKLOT_ERR_BA_DOWNLOAD_NOT_SCHEDULED`).
enum BAErrorCodeNames {
    static let all: [(Int, String)] = BAErrorCode.allCases.map { ($0.rawValue, screamingSnake("\($0)")) }

    /// `downloadNotScheduled` → `DOWNLOAD_NOT_SCHEDULED`.
    static func screamingSnake(_ name: String) -> String {
        var out = ""
        for c in name {
            if c.isUppercase, !out.isEmpty { out.append("_") }
            out.append(contentsOf: c.uppercased())
        }
        return out
    }
}
