import BacklotBasics

extension AssetPackManager {
    /// What a batch of packs came to when some could not be made available (Apple's iOS 27
    /// `AssetPackManager.LocalAvailabilityError`): thrown by
    /// ``ensureLocalAvailability(of:requireLatestVersions:)`` and ``reconcilePreferredLanguages()``
    /// once every pack of the batch has ended.
    ///
    /// ```swift
    /// do {
    ///     try await manager.ensureLocalAvailability(of: packs)
    /// } catch let error as AssetPackManager.LocalAvailabilityError {
    ///     for (pack, failure) in error.failures { print("\(pack.id): \(failure)") }
    /// }
    /// ```
    public struct LocalAvailabilityError: Error, CustomStringConvertible {
        /// The packs that are available locally.
        public let successes: Set<AssetPack>
        /// The packs that are not, each with its error.
        public let failures: [AssetPack: any Error]

        public init(successes: Set<AssetPack>, failures: [AssetPack: any Error]) {
            self.successes = successes
            self.failures = failures
        }

        public var description: String {
            let each = failures.sorted { $0.key.id < $1.key.id }.map { "\($0.key.id): \($0.value)" }
            return "\(failures.count) of \(successes.count + failures.count) asset packs are not available locally; "
                + each.joined(separator: "; ")
        }
    }

    /// Runs `ensure` for every pack at once and waits for all of them.
    /// - Throws: ``LocalAvailabilityError`` naming each failure, or `CancellationError` when the
    ///   calling task was cancelled.
    nonisolated func ensureEach(
        _ packs: some Sequence<AssetPack>, _ ensure: @escaping @Sendable (AssetPack) async throws -> Void
    ) async throws {
        var successes = Set<AssetPack>()
        var failures: [AssetPack: any Error] = [:]
        await withTaskGroup(of: (AssetPack, (any Error)?).self) { group in
            for pack in packs.sorted(by: { $0.id < $1.id }) {
                group.addTask {
                    do {
                        try await ensure(pack)
                        return (pack, nil)
                    } catch {
                        return (pack, error)
                    }
                }
            }
            for await (pack, error) in group {
                if let error { failures[pack] = error } else { successes.insert(pack) }
            }
        }
        try Task.checkCancellation()
        if !failures.isEmpty { throw LocalAvailabilityError(successes: successes, failures: failures) }
    }
}
