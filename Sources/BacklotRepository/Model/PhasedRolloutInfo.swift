import Foundation

/// A pack's phased rollout (``Releases/setPhasedRollout(app:pack:steps:stepSeconds:by:now:)``): the
/// production candidate's shares, the step it is at and since when, and its state.
///
/// ```swift
/// if let phases = try repository.releases.phasedRollout(app: "com.example.game", pack: "Levels") {
///     print(phases.state, phases.steps[phases.step])   // running 500
/// }
/// ```
public struct PhasedRolloutInfo: Sendable, Hashable {
    public let app: String
    public let pack: String
    /// The candidate version being rolled out.
    public let version: Int
    /// The shares it steps through, in basis points (1…10 000), rising.
    public let steps: [Int]
    public let stepSeconds: Int
    /// The index in ``steps`` of the share in force.
    public let step: Int
    public let stepSince: Date
    /// `running`, `halted`, `done` or `cancelled` (``BacklotProtocol/API/phaseStates``).
    public let state: String
    /// Why it halted or was cancelled.
    public let reason: String?
    /// The person who set it.
    public let setBy: String?
}
