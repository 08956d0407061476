/// A `--flag` without a value; `arguments[Self.force]` is true when it is given.
struct Flag: OptionDeclaration {
    let info: OptionInfo

    init(_ name: String, short: Character? = nil, help: String) {
        info = OptionInfo(
            name: name, short: short, valueName: nil, help: help, required: false, repeats: false,
            environment: nil, profileKey: nil, defaultDescription: nil, allValues: [],
            convert: { _ in true }, expected: "nothing")
    }
}
