import BacklotBasics

/// Bounds the pages of a listing the server continues (ListObjectsV2, ListParts,
/// ListMultipartUploads). Each page is bounded by its body limit, and what pages add up to by the
/// caller's limit, but a server answering "more follows" with pages that add nothing (a marker
/// that alternates, a fresh token each time) would otherwise be asked forever. S3 itself may send
/// a few empty pages (over many delete markers), so some are allowed: 1,000 in a listing.
struct S3ListingPages {
    /// Pages that may add nothing in one listing.
    static let maximumEmptyPages = 1_000
    let operation: String
    let endpoint: String
    private var empty = 0

    init(operation: String, endpoint: String) {
        self.operation = operation
        self.endpoint = endpoint
    }

    /// Counts a page that added `count` items (entries, prefixes, parts or uploads).
    /// - Throws: ``BacklotError/Code/objectStore`` past ``maximumEmptyPages`` that added nothing.
    mutating func page(adding count: Int) throws {
        guard count == 0 else { return }
        empty += 1
        guard empty <= Self.maximumEmptyPages else {
            throw BacklotError(
                .objectStore,
                "\(operation) at \(endpoint): \(empty) pages listed nothing, yet each said more follows",
                context: endpoint, hint: "the object store does not advance its listing; check it, or its proxy")
        }
    }
}
