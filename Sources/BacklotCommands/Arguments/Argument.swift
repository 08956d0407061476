/// One positional argument.
struct Argument: Sendable {
    let name: String
    let help: String
    let required: Bool
    let repeats: Bool

    init(_ name: String, help: String, required: Bool = true, repeats: Bool = false) {
        self.name = name
        self.help = help
        self.required = required
        self.repeats = repeats
    }
}
