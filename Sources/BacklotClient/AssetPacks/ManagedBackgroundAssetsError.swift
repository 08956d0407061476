import BacklotBasics

/// Errors of the managed API (Apple's `ManagedBackgroundAssetsError`), each saying what to do.
public enum ManagedBackgroundAssetsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No pack with this ID is in the catalog (or installed, for local calls).
    case assetPackNotFound(withID: String)
    /// No installed pack holds a file at this path.
    case fileNotFound(at: String)

    public var description: String {
        switch self {
        case .assetPackNotFound(let id):
            "no asset pack with the ID \(id) was found; check the ID against the catalog (backlot status --container DIR lists what is installed)"
        case .fileNotFound(let path):
            "no installed asset pack holds a file at \(path); call ensureLocalAvailability(of:) for the pack that holds it first"
        }
    }
}
