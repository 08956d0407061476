/// The commands that read or change a container that must exist already: a path that holds no
/// `state.sqlite` is refused before they run (exit status 2, "DIR is not a Backlot container"),
/// instead of a new, empty container being created and reported on.
///
/// `fetch` and `agent` create their container; `notify` and `simulate` queue an event for an agent
/// that may not have started yet; `agent status` checks for the agent's own files.
extension StatusCommand {
    static var existingContainerOptions: [String] { ["container"] }
}

extension RemoveCommand {
    static var existingContainerOptions: [String] { ["container"] }
}

extension VerifyCommand {
    static var existingContainerOptions: [String] { ["container"] }
}

extension ClipHandoffCommand {
    static var existingContainerOptions: [String] { ["from", "to"] }
}
