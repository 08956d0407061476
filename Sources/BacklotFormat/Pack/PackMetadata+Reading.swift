import BacklotBasics
import BacklotJSON

extension PackMetadata {
    /// The metadata a manifest object holds, as ``json`` writes it (a normalised manifest and the
    /// pack's `variants`): an index's metadata, or what a server stored of a version. The one
    /// place its fields are read by name.
    ///
    /// ```swift
    /// let metadata = try PackMetadata(json: node, source: "game/Levels/3", what: "the stored metadata", code: .io)
    /// print(metadata.downloadPolicy, metadata.platforms)
    /// ```
    /// - Parameters:
    ///   - what: how errors name the metadata ("the index metadata").
    ///   - code: the error's code (``BacklotError/Code/corruptArchive`` for a pack's index).
    /// - Throws: ``BacklotError`` naming `source` and the first rule the ID, download policy,
    ///   platforms, language or variants break.
    public init(
        json manifest: JSONNode, source: String, what: String = "the metadata",
        code: BacklotError.Code = .corruptArchive
    ) throws {
        var checker = ManifestChecker()
        let id = checker.checkPackID(manifest)
        let policy = checker.checkPolicy(manifest)
        let platforms = checker.checkPlatforms(manifest)
        let language = checker.checkLanguage(manifest)
        guard let id, let policy, let platforms, !checker.hasErrors else {
            let first = checker.diagnostics.first { $0.severity == .error }
            throw BacklotError(
                code, "\(what)'s manifest is invalid: \(first.map { "\($0.jsonPath): \($0.message)" } ?? "")",
                context: source)
        }
        var variants: PackVariants? = nil
        if let node = manifest["variants"] {
            do {
                variants = try PackVariants(json: node, source: source)
            } catch let e as BacklotError {
                throw BacklotError(
                    code, "\(what)'s variants are invalid: \(e.message)", context: source, hint: e.hint)
            }
        }
        self.init(
            assetPackID: id, downloadPolicy: policy, platforms: platforms, userInfo: manifest["userInfo"],
            language: language, variants: variants)
    }
}
