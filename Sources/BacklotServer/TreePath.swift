import BacklotRepository

/// Reads what a path of the published tree names (docs/protocol.md §1), for the download counts.
///
/// ```swift
/// TreePath.target("/v1/apps/com.example.game/production/catalog.json")   // .catalog(app: "com.example.game")
/// ```
enum TreePath {
    /// What the file at `path` is a download of, or nil for a key list or a path of no kind.
    static func target(_ path: String) -> DownloadHit.Target? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        // "", "v1", kind, …
        guard parts.count >= 4, parts[0].isEmpty, parts[1] == "v1" else { return nil }
        switch parts[2] {
        case "apps" where parts.count == 6 && parts[5] == "catalog.json":
            return .catalog(app: String(parts[3]))
        case "packs" where parts.count == 4 && parts[3].hasSuffix(".pack"):
            let sha = parts[3].dropLast(5)
            guard sha.count == 64, sha.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
                return nil
            }
            return .pack(archiveSHA256: String(sha))
        case "apple" where parts.count == 7 && parts[6] == "manifest.json":
            return .appleManifest(app: String(parts[3]))
        case "apple":
            return applePack(path)
        default:
            return nil
        }
    }

    /// `v1/apple/APP/CHANNEL/PLATFORM/packs/ID`, or nil.
    static func applePack(_ path: String) -> DownloadHit.Target? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 8, parts[0].isEmpty, parts[1] == "v1", parts[2] == "apple", parts[6] == "packs",
            !parts[7].isEmpty
        else { return nil }
        return .applePack(app: String(parts[3]), channel: String(parts[4]), pack: String(parts[7]))
    }
}
