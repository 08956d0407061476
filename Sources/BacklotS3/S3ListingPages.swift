import BacklotBasics

/// Bounds the pages of a listing the server continues (ListObjectsV2, ListParts,
/// ListMultipartUploads). Each page is bounded by its body limit, and what pages add up to by the
/// caller's limit, but a server answering "more follows" with pages that add nothing (a marker
/// that alternates, a fresh token each time) would otherwise be asked forever. S3 itself may send
/// empty pages (each scans up to 1,000 keys, and over many delete markers finds none), so some
/// are allowed: 1,000 in a row, 100,000 in a listing (a hundred million markers).
struct S3ListingPages {
    /// Pages in a row that may add nothing.
    static let maximumEmptyPages = 1_000
    /// Pages in one listing that may add nothing.
    static let maximumEmptyPagesInAll = 100_000
    let operation: String
    let endpoint: String
    private var empty = 0
    private var emptyInAll = 0

    init(operation: String, endpoint: String) {
        self.operation = operation
        self.endpoint = endpoint
    }

    /// Counts a page that added `count` items (entries, prefixes, parts or uploads).
    /// - Throws: ``BacklotError/Code/objectStore`` past ``maximumEmptyPages`` in a row, or
    ///   ``maximumEmptyPagesInAll``, that added nothing.
    mutating func page(adding count: Int) throws {
        guard count == 0 else {
            empty = 0
            return
        }
        empty += 1
        emptyInAll += 1
        guard empty <= Self.maximumEmptyPages, emptyInAll <= Self.maximumEmptyPagesInAll else {
            throw BacklotError(
                .objectStore,
                "\(operation) at \(endpoint): \(emptyInAll) pages listed nothing (\(empty) in a row), yet each said more follows",
                context: endpoint, hint: "the object store does not advance its listing; check it, or its proxy")
        }
    }
}
