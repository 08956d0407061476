import BacklotBasics
import BacklotFormat

/// `backlot template [-o FILE]`: writes a manifest template to fill in.
struct TemplateCommand: Command {
    static let output = Option<String?>("output", "FILE", short: "o", help: "Write to FILE instead of standard output.")
    static let force = Flag("force", help: "Replace FILE if it exists.")
    static let spec = CommandSpec(
        name: "template",
        summary: "Write a manifest template to fill in (the keys of Apple's ba-package template).",
        discussion: "Replace each [placeholder], remove what you do not need, then run `backlot package`.",
        options: [output, force])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        guard let path = arguments[output] else {
            io.out(ManifestTemplate.text)
            return
        }
        let file = try AtomicFile(path: path, overwrite: arguments[force])
        try file.descriptor.write(Array(ManifestTemplate.text.utf8))
        try file.commit()
        io.err(
            "Wrote a manifest template to \(path). Fill in the [placeholders], then: backlot package \(path) -o PACK.pack\n"
        )
    }
}
