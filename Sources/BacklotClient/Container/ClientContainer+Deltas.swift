import BacklotBasics
import BacklotContainer

extension ClientContainer {
    /// What the last install of a pack read from a delta file (docs/format.md §14).
    public struct DeltaUse: Sendable, Hashable {
        /// The pack digest of the release that install made.
        public let digest: String
        /// Bytes downloaded from the delta (its prefix and frames), part of the install's downloaded bytes.
        public let bytes: UInt64
        /// Chunks rebuilt from it (the others were reused or fetched whole).
        public let chunks: Int
    }

    /// What the last install of pack `id` read from a delta, or nil when none was recorded.
    ///
    /// ```swift
    /// if let use = try container.lastDeltaUse("Levels") { print(use.bytes, "bytes as deltas") }
    /// ```
    /// - Throws: the container database's errors.
    public func lastDeltaUse(_ id: String) throws -> DeltaUse? {
        guard let text = try meta(.lastDeltaUse(ofPack: id)) else { return nil }
        let parts = text.split(separator: " ")
        guard parts.count == 3, let bytes = CheckedInteger.parse(String(parts[1]), as: UInt64.self),
            let chunks = CheckedInteger.parse(String(parts[2]), as: Int.self)
        else { return nil }
        return DeltaUse(digest: String(parts[0]), bytes: bytes, chunks: chunks)
    }

    /// Records what an install read from a delta (``lastDeltaUse(_:)``).
    func recordDeltaUse(_ id: String, digest: String, bytes: UInt64, chunks: Int) throws {
        try setMeta(.lastDeltaUse(ofPack: id), "\(digest) \(bytes) \(chunks)")
    }
}
