import BacklotBasics
import BacklotInfoPlist
import BacklotJSON

/// `backlot plist check Info.plist`: what iOS and App Store Connect would do with the Background Assets keys.
struct PlistCheckCommand: Command {
    static let define = Option<[String]>(
        "define", "VAR=VALUE", short: "D",
        help: "A value for a $(VAR) build-setting placeholder (repeat it, or A=1,B=2).")
    static let spec = CommandSpec(
        name: "plist check",
        summary: "Check an app's Info.plist (XML or binary) for Background Assets mistakes before a device finds them.",
        discussion:
            "Exits 0 when there is no error (warnings allowed), 1 when there is one, 2 when the file is not a property list.",
        arguments: [.init("INFO_PLIST", help: "The app's Info.plist, XML or binary.")],
        options: [define, jsonFlag])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        var defines: [String: String] = [:]
        for pair in arguments[define] where !pair.isEmpty {
            guard let eq = pair.firstIndex(of: "="), eq != pair.startIndex else {
                throw BacklotError(.usage, "--define takes VAR=VALUE, not '\(pair)'", context: "backlot plist check")
            }
            defines[String(pair[..<eq])] = String(pair[pair.index(after: eq)...])
        }
        let path = arguments.positionals[0]
        let findings = InfoPlistChecker(defines: defines).check(try PropertyListReader.read(path: path))
        let errors = findings.filter { $0.severity == .error }.count
        if arguments[jsonFlag] {
            try io.outJSON(
                Output(
                    file: path, errorCount: errors, warningCount: findings.count - errors,
                    findings: findings.map {
                        .init(
                            severity: $0.severity.rawValue, rule: $0.rule, keyPath: $0.keyPath, message: $0.message,
                            fix: $0.fix)
                    }))
        } else {
            for f in findings { io.out("\(path): \(f)\n") }
            io.out(
                "\(path): \(errors) error\(errors == 1 ? "" : "s"), \(findings.count - errors) warning\(findings.count - errors == 1 ? "" : "s")\n"
            )
        }
        if errors > 0 {
            throw BacklotError(
                .checkFailed, "the Info.plist has \(errors) error\(errors == 1 ? "" : "s")", context: path)
        }
    }
}

extension PlistCheckCommand {
    /// `plist check --json`.
    struct Output: Encodable {
        struct Finding: Encodable {
            let severity: String
            let rule: String
            let keyPath: String
            let message: String
            @NullWhenAbsent var fix: String?
        }
        let file: String
        let errorCount: Int
        let warningCount: Int
        let findings: [Finding]
    }
}
