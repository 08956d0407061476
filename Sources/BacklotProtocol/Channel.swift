/// A release channel (Apple's internal TestFlight, external TestFlight, and the App Store).
public enum Channel: String, Sendable, Hashable, CaseIterable {
    /// Any processed version can be released here at once.
    case `internal`
    /// Needs a reviewer's approval.
    case external
    /// Needs a reviewer's approval; may be rolled out to a percentage of devices.
    case production
}
