extension PublishedTreeLayout {
    /// How a catalog names another file of the tree: relative to the catalog's own URL, three
    /// folders up to `v1/` (docs/protocol.md §2), so that a tree can move to another host or path.
    ///
    /// ```swift
    /// PublishedTreeLayout.pack(sha256: digest).referenceFromCatalog   // "../../../packs/DIGEST.pack"
    /// ```
    public var referenceFromCatalog: String {
        Self.catalogToRoot + String(path.utf8.dropFirst(Self.root.utf8.count + 1))!
    }

    /// The file a catalog's reference names, accepted only in exactly the form
    /// ``referenceFromCatalog`` writes (so a signed catalog cannot point a client outside the tree
    /// by an unusual spelling); nil for any other form.
    public init?(referenceFromCatalog reference: String) {
        guard reference.utf8.starts(with: Self.catalogToRoot.utf8) else { return nil }
        let rest = String(decoding: reference.utf8.dropFirst(Self.catalogToRoot.utf8.count), as: UTF8.self)
        guard let file = PublishedTreeLayout(path: Self.root + "/" + rest), file.referenceFromCatalog == reference
        else { return nil }
        self = file
    }

    /// The tree's root (the folder that holds `v1/`) relative to a catalog's URL.
    public static let baseFromCatalog = "../../../../"

    /// The tree's root relative to an archive's URL (`v1/packs/SHA256.pack`).
    public static let rootFromPack = "../../"

    /// A catalog's folder up to `v1/`.
    static let catalogToRoot = "../../../"
}
