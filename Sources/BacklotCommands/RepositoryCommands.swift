import BacklotBasics
import BacklotRepository

/// `backlot catalog resign --data DIR`: re-signs every catalog (for trees served by other hosts).
struct CatalogResignCommand: Command {
    static let spec = CommandSpec(
        name: "catalog resign",
        summary: "Re-sign every published catalog now (for trees copied to another host or CDN); run it at least weekly. Not while backlot serve runs on DIR (it re-signs itself).",
        options: [.init("data", value: "DIR", help: "The repository's data folder (required)."),
                  .init("database", value: "URL", help: "The PostgreSQL metadata backlot serve uses (postgresql://USER@HOST:PORT/DB), if it does.")])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let data = try required("data", in: arguments)
        let lock = try RepositoryLock.acquire(dataFolder: data, for: "backlot catalog resign")
        defer { lock.release() }
        let repository = try Repository(directory: RepositoryDirectory(path: data),
                                        database: try arguments.values["database"].map(AdminInitCommand.openDatabase))
        let n = try repository.resign(margin: .infinity)
        io.out("Re-signed \(n) catalog\(n == 1 ? "" : "s"); each is valid for \(Int(Catalog.defaultLifetime / 86_400)) days.\n")
    }
}

/// `backlot keys rotate --data DIR`: a new signing key, announced with the old one.
struct KeysRotateCommand: Command {
    static let spec = CommandSpec(
        name: "keys rotate",
        summary: "Make a new signing key, publish it signed by the old one (clients pinned to the old key follow), and re-sign every catalog. Stop backlot serve on DIR first.",
        options: [.init("data", value: "DIR", help: "The repository's data folder (required)."),
                  .init("database", value: "URL", help: "The PostgreSQL metadata backlot serve uses (postgresql://USER@HOST:PORT/DB), if it does.")])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let data = try required("data", in: arguments)
        let lock = try RepositoryLock.acquire(dataFolder: data, for: "backlot keys rotate")
        defer { lock.release() }
        let repository = try Repository(directory: RepositoryDirectory(path: data),
                                        database: try arguments.values["database"].map(AdminInitCommand.openDatabase))
        let version = try repository.rotateKey()
        io.out("Published key list \(version) (v1/keys/root-\(version).json); new public key in \(repository.directory.publicKeyPath).\n")
    }
}
