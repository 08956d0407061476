import BacklotProtocol
import Foundation

/// A pack as the API lists it: its versions counted (deleted ones not), and its newest version.
///
/// ```swift
/// for pack in try repository.apps.packList(app: "com.example.game") { print(pack.id, pack.latest ?? 0) }
/// ```
public struct PackInfo: Sendable, Hashable {
    public let id: String
    public let created: Date
    /// How many versions it has (not counting deleted ones).
    public let versions: Int
    /// The number of its newest version, nil when it has none.
    public let latest: Int?
}
