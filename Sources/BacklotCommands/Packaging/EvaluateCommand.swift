import BacklotBasics
import BacklotFormat
import BacklotJSON

/// `backlot evaluate MANIFEST`: lists every file the selectors match and its pack path.
struct EvaluateCommand: Command {
    static let sourceRoot = Option<String?>(
        "source-root", "DIR",
        help: "Where selector paths start (default: the manifest's sourceRoot, else the current directory).")
    static let spec = CommandSpec(
        name: "evaluate",
        summary: "Check a manifest and list every file it selects, with its path in the pack.",
        arguments: [.init("MANIFEST", help: "The manifest (JSON; comments allowed).")],
        options: [sourceRoot, jsonFlag])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let manifestPath = arguments.positionals[0]
        let (manifest, warnings) = try PackManifest.load(path: manifestPath)
        let root = SourceSelection.resolveSourceRoot(
            override: arguments[sourceRoot], manifest: manifest, manifestPath: manifestPath)
        let selection = try SourceSelection(manifest: manifest, sourceRoot: root)
        let allWarnings = warnings.map { "\(manifestPath):\($0)" } + selection.warnings
        if arguments[jsonFlag] {
            try io.outJSON(
                Output(
                    pack: manifest.assetPackID.rawValue, sourceRoot: selection.sourceRoot,
                    files: selection.files.map { .init(source: $0.sourcePath, path: $0.packPath, bytes: $0.size) },
                    variants: selection.variants?.json, warnings: allWarnings))
            return
        }
        for w in allWarnings { warn(w, io: io) }
        io.out("\(manifest.assetPackID): \(selection.files.count) files from \(selection.sourceRoot)\n")
        if let variants = selection.variants {
            io.out("  variants: \(variants.json.serialized()) (a path's #tcf_ or #tier_ marker names its variant)\n")
        }
        for f in selection.files {
            io.out(
                f.sourcePath == f.packPath
                    ? "  \(TerminalText.quoted(f.packPath))\n"
                    : "  \(TerminalText.quoted(f.sourcePath)) -> \(TerminalText.quoted(f.packPath))\n")
        }
    }
}

extension EvaluateCommand {
    /// `evaluate --json` (docs/json.md).
    struct Output: Encodable {
        struct File: Encodable {
            let source: String
            let path: String
            let bytes: UInt64
        }
        let pack: String
        let sourceRoot: String
        let files: [File]
        /// The variants the files come in, as the pack's metadata will list them (nil without).
        let variants: JSONNode?
        let warnings: [String]
    }
}
