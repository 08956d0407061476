import BacklotBasics
import BacklotProtocol
import Foundation

/// `backlot tokens create --role ROLE [--label TEXT] [--expires 30d]`: prints the new token once.
struct TokensCreateCommand: Command {
    static let role = Option<Role>("role", "ROLE", help: "admin, uploader, reviewer or reader.")
    static let person = Option<String?>(
        "person", "NAME",
        help:
            "Who it belongs to: a person, or a service account such as ci (default: the person of the token that creates it). An app's four-eyes rule compares people, not tokens."
    )
    static let label = Option<String?>("label", "TEXT", help: "What the token is for (tokens list shows it).")
    static let expires = Option<ExpiryDuration?>(
        "expires", "DURATION", help: "Make it expire after this long: 90m, 12h, 30d (default: never).")
    static let output = Option<String?>(
        "output", "FILE", short: "o",
        help: "Write the token to FILE (mode 0600, replaced if it exists) for --token-file, instead of standard output."
    )

    static let spec = CommandSpec(
        name: "tokens create",
        summary:
            "Create an API token for a role (admin, uploader, reviewer, reader). Needs an admin token. The token is printed once.",
        discussion:
            "Only the token goes to standard output (so that `backlot tokens create … > FILE` saves it); what it is goes to standard error.",
        options: APIClient.options + [role, person, label, expires, output, jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let body = API.TokenCreate(
            role: arguments[role], person: arguments[person], label: arguments[label] ?? "",
            expiresInSeconds: arguments[expires].map { Int64($0.seconds) })
        let file = try openOutput(arguments[output])  // before the server makes a token nobody could keep
        let made = try api.call(API.createToken, body: body)
        try printNewToken(made, output: arguments[output], file: file, json: arguments[jsonFlag], io: io)
    }

    /// The file `-o` names, opened (as a temporary file beside it) before the server is asked, so
    /// that a folder that does not exist, cannot be written or a path that is a folder is refused
    /// while nothing has changed yet.
    static func openOutput(_ output: String?) throws -> AtomicFile? {
        guard let output else { return nil }
        if try FileSystem.status(output)?.kind == .directory {
            throw BacklotError(
                .invalidInput, "is a folder, not a file to write the token to", context: output,
                hint: "name a file, such as \(output)/ci.token")
        }
        return try AtomicFile(path: output, overwrite: true, mode: 0o600)
    }

    /// Prints the new token once (or writes it to `output`, mode 0600), and what it is on standard error.
    /// If the file cannot be written after all, the token is printed instead: it exists on the
    /// server and is shown only this once.
    static func printNewToken(
        _ answer: APIClient.Answer, output: String?, file: AtomicFile?, json: Bool, io: any CommandIO
    ) throws {
        // The secret first: the token exists on the server, and is shown only this once. It is read
        // alone, not as `API.IssuedToken`, so that a field of the rest that does not decode (a
        // server of another version) cannot lose it.
        struct Secret: Decodable { let token: String? }
        guard let token = (try? answer.decode(Secret.self))?.token else {
            throw BacklotError(.io, "the server sent no token", context: answer.route)
        }
        if let output, let file {
            do {
                try file.descriptor.write(Array((token + "\n").utf8))
                try file.commit()
            } catch {
                io.out(token + "\n")
                throw BacklotError(
                    .io, "the new token could not be written (\(error)); it is printed above, once: keep it",
                    context: output,
                    hint: "save it in a file of mode 0600 for --token-file")
            }
        }
        let t: TokenOutput
        do {
            t = TokenOutput(try answer.decode(API.IssuedToken.self))
        } catch {
            if output == nil { io.out(token + "\n") }
            throw BacklotError(
                .io,
                "the new token is \(output.map { "in \($0)" } ?? "printed above, once"), but the rest of the answer could not be read: \(error)",
                context: answer.route, hint: "keep the token; backlot tokens list shows what it is")
        }
        let what = "token #\(t.id) (\(t.role), \(t.person))\(t.expires.map { ", expires \($0)" } ?? "")"
        if json {
            var shown = t
            if let output { (shown.token, shown.tokenFile) = (nil, output) }
            try io.outJSON(shown)
        } else if let output {
            io.out("Wrote \(what) to \(output) (mode 0600): use it with --token-file \(output)\n")
        } else {
            io.out(token + "\n")
            io.err(
                "\(what): shown this once, keep it (backlot tokens create … -o FILE writes a file for --token-file)\n")
        }
    }
}

/// `backlot tokens list`.
struct TokensListCommand: Command {
    static let spec = CommandSpec(
        name: "tokens list",
        summary:
            "List the API tokens: ID, label, role, created, last used, expiry, revoked (never the token itself). Needs an admin token.",
        options: APIClient.options + [jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let api = try APIClient(arguments, io: io, command: spec.name)
        let list = TokenOutput.List(tokens: try api.send(API.listTokens).tokens.map(TokenOutput.init))
        if arguments[jsonFlag] {
            try io.outJSON(list)
            return
        }
        // PERSON last: the columns before it are where scripts that read this table find them.
        io.out("ID\tROLE\tLABEL\tCREATED\tLAST USED\tEXPIRES\tSTATE\tPERSON\n")
        for t in list.tokens {
            let label = t.label
            io.out(
                "\(t.id)\t\(t.role)\t\(label.isEmpty ? "-" : label)\t\(t.created)\t\(t.lastUsed ?? "-")\t\(t.expires ?? "-")\t\(Self.state(t))\t\(t.person)\n"
            )
        }
    }
}

extension TokensListCommand {
    /// `revoked` (with when), `expired`, or `active`: what the server would answer the token now.
    static func state(_ token: TokenOutput, now: Date = Date()) -> String {
        if let revoked = token.revoked { return "revoked " + revoked }
        if let text = token.expires, let expires = RFC3339.date(text), expires <= now { return "expired" }
        return "active"
    }
}

/// `backlot tokens revoke ID`.
struct TokensRevokeCommand: Command {
    static let spec = CommandSpec(
        name: "tokens revoke",
        summary: "Revoke an API token: it is refused (401) at once, on every server. Needs an admin token.",
        arguments: [.init("ID", help: "The token's ID (tokens list shows it).")],
        options: APIClient.options + [jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let id = try tokenID(arguments.positionals[0], command: spec.name)
        let api = try APIClient(arguments, io: io, command: spec.name)
        let revoked = try api.send(API.revokeToken, [.id: "\(id)"])
        if arguments[jsonFlag] {
            // The token as tokens list shows it: `revoked` is when, in both.
            try io.outJSON(TokenOutput(revoked))
        } else {
            io.out("Revoked token #\(id); it is refused from now on.\n")
        }
    }

    static func tokenID(_ text: String, command: String) throws -> Int {
        guard let id = CheckedInteger.parse(text.hasPrefix("#") ? String(text.dropFirst()) : text, as: Int.self),
            id >= 1
        else {
            throw BacklotError(
                .usage,
                "ID must be a token's number (tokens list shows them), not '\(text.hasPrefix("blt_") ? "blt_…" : text)'",
                context: "backlot \(command)", hint: "backlot tokens list")
        }
        return id
    }
}

/// `backlot tokens rotate ID`: a new secret for the same token (ID, role and label kept).
struct TokensRotateCommand: Command {
    static let spec = CommandSpec(
        name: "tokens rotate",
        summary:
            "Give a token a new secret (same ID, role and label) and print it once; the old secret is refused at once. Needs an admin token.",
        discussion:
            "This is how the first admin token (DIR/admin-token, or admin init's) is replaced: rotate it, then use the new one.",
        arguments: [.init("ID", help: "The token's ID (tokens list shows it).")],
        options: APIClient.options + [TokensCreateCommand.output, jsonFlag],
        requirements: ServerOptions.requirements)

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let id = try TokensRevokeCommand.tokenID(arguments.positionals[0], command: spec.name)
        let api = try APIClient(arguments, io: io, command: spec.name)
        // Opened first: a rotation whose new secret could not be kept would lock its holder out.
        let file = try TokensCreateCommand.openOutput(arguments[TokensCreateCommand.output])
        let rotated = try api.call(API.rotateToken, [.id: "\(id)"])
        try TokensCreateCommand.printNewToken(
            rotated, output: arguments[TokensCreateCommand.output], file: file, json: arguments[jsonFlag], io: io)
    }
}
