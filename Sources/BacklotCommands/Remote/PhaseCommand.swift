import BacklotBasics
import BacklotProtocol

/// `backlot phase --app A --pack P [--steps 1,5,25,100 --every 1d]`: set or show a phased production rollout.
struct PhaseCommand: Command {
    static let steps = Option<String?>(
        "steps", "LIST",
        help:
            "Set a phased rollout of the production candidate: rising shares in percent, comma-separated (1,5,25,100); the first is taken now."
    )
    static let every = Option<ExpiryDuration>(
        "every", "DURATION", default: ExpiryDuration(argument: "1d")!,
        help: "How long each step lasts before the next.",
        expected: "a duration from a minute to 30 days, such as 12h or 1d",
        check: { (API.Limits.shortestPhaseStep...API.Limits.longestPhaseStep).contains($0.seconds) })
    static let spec = CommandSpec(
        name: "phase",
        summary:
            "Set or show a phased production rollout: the candidate's share rises one step at a time and halts by itself (share 0) when devices report its installs failing more often than the live version's. Setting one needs a reviewer token; changing the rollout by hand cancels it.",
        options: APIClient.options + [PackOptions.app, PackOptions.pack, steps, every, jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let app = arguments[PackOptions.app]
        let pack = arguments[PackOptions.pack]
        let phases: API.PhasedRollout
        if let list = arguments[steps] {
            let shares = try list.split(separator: ",", omittingEmptySubsequences: false).map { text in
                guard let p = Double(text.trimmingCharacters(in: .whitespaces)), p >= API.Limits.lowestPercent, p <= 100
                else {
                    throw BacklotError(
                        .usage, "--steps: \"\(text)\" is not a percentage from 0.01 to 100", context: list,
                        hint: "give rising percentages such as 1,5,25,100")
                }
                return API.RolloutShare(percent: p)
            }
            let seconds = arguments[every].seconds
            phases = try api.send(
                API.setPhasedRollout, [.app: app, .pack: pack],
                body: API.PhasedRolloutRequest(steps: shares, stepSeconds: seconds))
        } else {
            phases = try api.send(API.getPhasedRollout, [.app: app, .pack: pack])
        }
        if arguments[jsonFlag] {
            try io.outJSON(phases)
            return
        }
        let list = phases.steps.map { RemoteNumber.text($0.percent) + " %" }.joined(separator: " → ")
        let current =
            phases.steps.indices.contains(phases.step) ? RemoteNumber.text(phases.steps[phases.step].percent) : "?"
        var line =
            "\(app)/\(pack): version \(phases.version), \(list), a step every \(ExpiryDuration.text(seconds: phases.stepSeconds)); "
        switch phases.state {
        case "running": line += "at step \(phases.step + 1) (\(current) %) since \(phases.stepSince)"
        case "done": line += "done"
        default: line += phases.state + (phases.reason.map { ": \($0)" } ?? "")
        }
        io.out(line + (phases.setBy.map { " (set by \($0))" } ?? "") + "\n")
    }
}
