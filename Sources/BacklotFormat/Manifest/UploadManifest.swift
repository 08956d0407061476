import BacklotJSON

/// What a server keeps of the manifest given with an Apple-archive upload (`ba-package`'s JSON):
/// the pack's metadata (``PackMetadata``) and the manifest's file selectors, which processing
/// checks the archive's entries against. Read and written here alone, so that the server spells
/// no manifest key.
///
/// ```swift
/// let kept = UploadManifest.keptText(of: manifestJSON, parsed: manifest)
/// if let selectors = try UploadManifest.selectorsManifest(kept, source: "version 3") {
///     try summary.check(against: selectors, source: "the uploaded archive")
/// }
/// ```
public enum UploadManifest {
    static let selectorsKey = "fileSelectors"

    /// The text kept for an upload: `parsed`'s metadata with the selectors of `manifest` (the JSON
    /// `parsed` was read from).
    public static func keptText(of manifest: JSONNode, parsed: PackManifest) -> String {
        var members = PackMetadata(parsed).json.objectMembers ?? []
        if let selectors = manifest[selectorsKey] { members.append(JSONMember(key: selectorsKey, value: selectors)) }
        return JSONNode(.object(members)).serialized()
    }

    /// The manifest to check an uploaded archive's entries against, read from its kept text; nil
    /// for a text kept before the selectors were (nothing to check).
    /// - Throws: ``BacklotError/Code/invalidJSON`` or ``BacklotError/Code/invalidManifest`` for a
    ///   kept text that is not a manifest.
    public static func selectorsManifest(_ text: String, source: String) throws -> PackManifest? {
        let read = try JSONReader(source: source).read(text)  // read once: checked as a manifest below
        guard read.root[selectorsKey] != nil else { return nil }
        return try PackManifest.load(read, source: source).manifest
    }
}
