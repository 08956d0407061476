import BacklotBasics
import BacklotJSON
import BacklotProtocol
import BacklotRepository

/// `backlot catalog resign --data DIR`: re-signs every catalog (for trees served by other hosts).
struct CatalogResignCommand: Command {
    static let spec = CommandSpec(
        name: "catalog resign",
        summary:
            "Re-sign every published catalog now (for trees copied to another host or CDN); run it at least weekly. Not while backlot serve runs on DIR (it re-signs itself).",
        discussion: "Give the same --database, --storage and --signing-key as backlot serve, when it uses them.",
        options: RepositoryOptions.options + [jsonFlag])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let (repository, lock) = try RepositoryOptions.open(arguments, command: spec.name)
        defer { lock.release() }
        let n = try repository.publication.resign(margin: .infinity)
        if arguments[jsonFlag] {
            try io.outJSON(Output(catalogCount: n, lifetimeSeconds: Int(Catalog.defaultLifetime)))
            return
        }
        io.out(
            "Re-signed \(n) catalog\(n == 1 ? "" : "s"); each is valid for \(Int(Catalog.defaultLifetime / 86_400)) days.\n"
        )
    }
}

/// `backlot keys rotate --data DIR`: a new signing key, announced with the old one.
struct KeysRotateCommand: Command {
    static let spec = CommandSpec(
        name: "keys rotate",
        summary:
            "Make a new signing key, publish it signed by the old one (clients pinned to the old key follow), and re-sign every catalog. Stop backlot serve on DIR first.",
        discussion: """
            Give the same --database and --storage as backlot serve, when it uses them. With --signing-key
            FILE, the new key replaces FILE (the old one is kept in DIR/keys): stop every server of the
            repository first, and give them the new FILE before they start again.
            """,
        options: RepositoryOptions.options + [jsonFlag])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let (repository, lock) = try RepositoryOptions.open(arguments, command: spec.name)
        defer { lock.release() }
        let version = try repository.publication.rotateKey()
        if arguments[jsonFlag] {
            try io.outJSON(
                Output(
                    keyListVersion: version, keyList: PublishedTreeLayout.keyList(version: version).path,
                    publicKey: repository.directory.publicKeyPath))
            return
        }
        io.out(
            "Published key list \(version) (\(PublishedTreeLayout.keyList(version: version).path)); new public key in \(repository.directory.publicKeyPath).\n"
        )
    }
}

extension CatalogResignCommand {
    /// `catalog resign --json`.
    struct Output: Encodable {
        let catalogCount: Int
        let lifetimeSeconds: Int
    }
}

extension KeysRotateCommand {
    /// `keys rotate --json`.
    struct Output: Encodable {
        let keyListVersion: Int
        let keyList: String
        let publicKey: String
    }
}
