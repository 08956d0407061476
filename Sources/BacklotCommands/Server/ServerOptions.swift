import BacklotBasics
import BacklotRepository
import Foundation

/// The server connection, declared once for every command that calls the management API:
/// `--server`, `--ca`, `--token`, `--token-file`, `--profile`.
///
/// Each value comes from the command line, else the environment (`BACKLOT_SERVER`, `BACKLOT_CA`,
/// `BACKLOT_TOKEN`, `BACKLOT_PROFILE`), else the selected profile of ``ProfileFile``. For the token,
/// `--token` or `--token-file` on the command line wins over `$BACKLOT_TOKEN`, which wins over the
/// profile's `token` or `tokenFile`.
enum ServerOptions {
    static let server = Option<String>(
        "server", "URL", environment: "BACKLOT_SERVER", profileKey: "server",
        help: "The server's base URL, such as https://127.0.0.1:8443.",
        expected: "an http(s) URL", check: { $0.hasPrefix("https://") || $0.hasPrefix("http://") })
    static let ca = Option<String?>(
        "ca", "FILE", environment: "BACKLOT_CA", profileKey: "ca",
        help: "A CA certificate to trust (the server's DIR/tls/ca.pem with --tls auto).")
    static let token = Option<String?>(
        "token", "TOKEN", environment: "BACKLOT_TOKEN", profileKey: "token",
        help: "An API token; on the command line it shows in ps, so prefer --token-file or $BACKLOT_TOKEN.")
    static let tokenFile = Option<String?>(
        "token-file", "FILE", profileKey: "tokenFile",
        help: "Read the API token from FILE (refused if others may read it: chmod 600), or from standard input with -.")
    static let profile = Option<String?>(
        "profile", "NAME", environment: "BACKLOT_PROFILE",
        help: "Take the server options from this profile of ~/.config/backlot/config.json.")

    static let all: [any OptionDeclaration] = [server, ca, token, tokenFile, profile]

    /// A token from one of the places it may come from.
    static let requirements: [@Sendable (ParsedArguments) -> String?] = [
        {
            $0.has(token) || $0.has(tokenFile)
                ? nil : "an API token (--token-file FILE, $BACKLOT_TOKEN, a profile's token, or --token TOKEN)"
        }
    ]

    /// The token, by precedence: the command line, the environment, the profile.
    /// - Throws: ``BacklotError/Code/usage`` for both `--token` and `--token-file`; what reading the file throws.
    static func resolveToken(_ arguments: ParsedArguments, io: any CommandIO, command: String) throws -> String {
        func rank(_ o: some OptionDeclaration) -> Int? {
            guard arguments.has(o) else { return nil }
            guard let source = arguments.sources[o.info.name] else { return 0 }
            return source.hasPrefix("$") ? 1 : 2
        }
        let tokenRank = rank(token)
        let fileRank = rank(tokenFile)
        if tokenRank == 0 && fileRank == 0 {
            throw BacklotError(.usage, "give --token or --token-file, not both", context: "backlot \(command)")
        }
        let text: String
        if let path = arguments[tokenFile], (fileRank ?? 3) < (tokenRank ?? 3) {
            text = try readTokenFile(path, io: io)
        } else if let t = arguments[token] {
            text = t
        } else {
            throw BacklotError(
                .usage, "no API token", context: "backlot \(command)",
                hint: "pass --token-file FILE or set BACKLOT_TOKEN")
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, !trimmed.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw BacklotError(
                .invalidInput,
                trimmed.isEmpty ? "the API token is empty" : "the API token holds spaces or several lines",
                context: arguments[tokenFile] ?? "the API token",
                hint: "the file holds one token, as tokens create printed it")
        }
        (io as? LineTrackingIO)?.addSecret(trimmed)
        return trimmed
    }

    /// The token in `path` (`-`: standard input). A file its group or others may read is refused, as ssh refuses such a key.
    static func readTokenFile(_ path: String, io: any CommandIO) throws -> String {
        let bytes: [UInt8]
        if path == "-" {
            bytes = try io.readStandardInput(atMost: 4096)
        } else {
            guard let status = try FileSystem.status(path) else {
                throw BacklotError(
                    .invalidInput, "there is no token file", context: path,
                    hint: "save the token tokens create printed there, with chmod 600")
            }
            if status.mode & 0o077 != 0 {
                throw BacklotError(
                    .invalidInput,
                    "the token file may be read by others (mode \(String(status.mode & 0o777, radix: 8)))",
                    context: path,
                    hint: "chmod 600 \(path)")
            }
            bytes = try FileDescriptor.readWholeFile(path, atMost: 4096, what: "the token file")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw BacklotError(.invalidInput, "the token is not UTF-8 text", context: path)
        }
        return text
    }
}
