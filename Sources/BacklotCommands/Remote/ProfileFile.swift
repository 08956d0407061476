import BacklotBasics
import BacklotJSON

/// The profile file, `$XDG_CONFIG_HOME/backlot/config.json` (default `~/.config/backlot/config.json`):
/// named sets of server options, so that no command needs them spelt out.
///
/// ```json
/// {
///   "default": "staging",
///   "profiles": {
///     "staging": {"server": "https://127.0.0.1:8443", "ca": "/srv/backlot/tls/ca.pem", "tokenFile": "~/.config/backlot/staging.token"},
///     "production": {"server": "https://assets.example.com", "token": "blt_…"}
///   }
/// }
/// ```
///
/// `--profile NAME` (or `$BACKLOT_PROFILE`) selects one, else `default` does. A value is taken
/// from the profile only when neither the command line nor the environment gives it (flag >
/// environment > profile). A file holding a `token` is refused when its group or others may read it.
struct ProfileFile: Sendable {
    let path: String
    let defaultProfile: String?
    let profiles: [String: [String: String]]
    let mode: UInt32

    /// The keys a profile may hold.
    static let keys = ["server", "ca", "token", "tokenFile"]

    /// Where the file is for this environment.
    static func location(environment: [String: String]) -> String? {
        if let xdg = environment["XDG_CONFIG_HOME"], !xdg.isEmpty { return xdg + "/backlot/config.json" }
        if let home = environment["HOME"], !home.isEmpty { return home + "/.config/backlot/config.json" }
        return nil
    }

    /// Reads the file of this environment, or nil when there is none.
    /// - Throws: ``BacklotError/Code/invalidInput`` naming the file for JSON that is not a profile
    ///   file (an unknown key, a value that is not a string).
    static func load(environment: [String: String]) throws -> ProfileFile? {
        guard let path = location(environment: environment), let status = try FileSystem.status(path) else {
            return nil
        }
        let bytes = try FileDescriptor.readWholeFile(path, atMost: 1 << 20, what: "the profile file")
        let root = try JSONReader(source: path).read(bytes).root
        func bad(_ message: String) -> BacklotError {
            BacklotError(
                .invalidInput, message, context: path,
                hint:
                    #"write {"default": "NAME", "profiles": {"NAME": {"server": "https://…", "ca": "FILE", "tokenFile": "FILE"}}}"#
            )
        }
        guard let members = root.objectMembers else { throw bad("the profile file is not a JSON object") }
        var defaultProfile: String? = nil
        var profiles: [String: [String: String]] = [:]
        for member in members {
            switch member.key {
            case "default":
                guard let s = member.value.stringValue else { throw bad("\"default\" must name a profile") }
                defaultProfile = s
            case "profiles":
                guard let entries = member.value.objectMembers else {
                    throw bad("\"profiles\" must be an object of named profiles")
                }
                for entry in entries {
                    guard let values = entry.value.objectMembers else {
                        throw bad("the profile \(entry.key) must be an object")
                    }
                    var profile: [String: String] = [:]
                    for v in values {
                        guard keys.contains(v.key) else {
                            let guess =
                                Suggestion.closest(to: v.key, in: keys).map { " (did you mean \"\($0)\"?)" } ?? ""
                            throw bad(
                                "the profile \(entry.key) has an unknown key \"\(v.key)\"\(guess); keys are \(keys.joinedAsList())"
                            )
                        }
                        guard let s = v.value.stringValue else { throw bad("\(entry.key).\(v.key) must be a string") }
                        profile[v.key] =
                            v.key == "tokenFile" || v.key == "ca" ? expandHome(s, environment: environment) : s
                    }
                    profiles[entry.key] = profile
                }
            default:
                throw bad("unknown key \"\(member.key)\" (the file holds \"default\" and \"profiles\")")
            }
        }
        return ProfileFile(path: path, defaultProfile: defaultProfile, profiles: profiles, mode: status.mode & 0o777)
    }

    static func expandHome(_ path: String, environment: [String: String]) -> String {
        guard path.hasPrefix("~/"), let home = environment["HOME"] else { return path }
        return home + path.dropFirst()
    }

    /// The profile `name` names (from `--profile` or `$BACKLOT_PROFILE`), else the default one, else none.
    /// - Throws: ``BacklotError/Code/usage`` for a name the file does not hold (with the closest);
    ///   ``BacklotError/Code/invalidInput`` when the profile holds a token and the file is readable by others.
    func selected(_ name: String?) throws -> (String, [String: String])? {
        guard let chosen = name ?? defaultProfile else { return nil }
        guard let profile = profiles[chosen] else {
            let names = profiles.keys.sorted()
            let guess = Suggestion.closest(to: chosen, in: names).map { "did you mean \($0)? " } ?? ""
            throw BacklotError(
                .usage, "there is no profile \(chosen)\(name == nil ? " (the file's default)" : "")", context: path,
                hint: guess + (names.isEmpty ? "the file has no profiles" : "its profiles: \(names.joinedAsList())"))
        }
        if profile["token"] != nil, mode & 0o077 != 0 {
            throw BacklotError(
                .invalidInput, "the profile file holds a token and others may read it (mode \(String(mode, radix: 8)))",
                context: path,
                hint: "chmod 600 \(path), or keep the token in a file of its own named by \"tokenFile\"")
        }
        return (chosen, profile)
    }
}
