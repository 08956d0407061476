import BacklotJSON

extension DownloadPolicy {
    /// Reads a policy written as in a manifest (`{"onDemand": {}}`), by the manifest's rules; nil if invalid.
    public init?(json: JSONNode) {
        var checker = ManifestChecker()
        guard let policy = checker.checkPolicy(JSONNode(.object([JSONMember(key: "downloadPolicy", value: json)]))),
            !checker.hasErrors
        else { return nil }
        self = policy
    }
}

extension Platform {
    /// Reads a non-empty platform list by the manifest's rules; nil if invalid.
    public static func list(json: JSONNode) -> [Platform]? {
        var checker = ManifestChecker()
        guard let list = checker.checkPlatforms(JSONNode(.object([JSONMember(key: "platforms", value: json)]))),
            !checker.hasErrors
        else { return nil }
        return list.sorted()
    }
}
