import BacklotBasics
import BacklotStore

/// The container's `state.sqlite`, owned here: its tables (``ContainerSchema/state``) are read and
/// written only through ``StateTransaction``'s typed operations, grouped by table in
/// `StateTransaction+Metadata`, `+InstalledReleases`, `+RequestQueue` and `+URLDownloads`.
/// The app, the agent and the extension each open it; SQLite's locking (WAL) keeps them consistent.
///
/// ```swift
/// let store = try StateStore(layout: ContainerLayout(root: container))
/// let installed = try store.read { try $0.installedReleases() }
/// try store.transaction { tx in try tx.setValue("7", forKey: .catalogVersion) }
/// ```
public struct StateStore: Sendable {
    /// The database, for the container's migrations test and nothing else.
    package let database: Database

    /// Opens (creating and migrating when needed) the state database of `layout`.
    /// - Throws: ``BacklotError/Code/io`` when it cannot be opened or migrated.
    public init(layout: ContainerLayout) throws {
        database = try ContainerSchema.state.open(layout.stateDatabase)
    }

    /// Runs `body` in one `BEGIN IMMEDIATE … COMMIT` transaction: what it throws rolls everything back.
    @discardableResult
    public func transaction<T>(_ body: (inout StateTransaction) throws -> T) throws -> T {
        try database.transaction { c in
            var tx = StateTransaction(connection: c)
            return try body(&tx)
        }
    }

    /// Writes a consistent copy of the database to `layout`'s (which must not exist yet) with
    /// another device identifier: how a fleet simulator (`backlot fleet`) makes many devices that
    /// hold one installed release. The copy is made by SQLite (`VACUUM INTO`), so it is whole even
    /// while others write.
    /// - Throws: ``BacklotError/Code/io`` when the copy cannot be written.
    public func copy(to layout: ContainerLayout, deviceID: String) throws {
        try database.read { c in _ = try c.run("VACUUM INTO ?", [.text(layout.stateDatabase)]) }
        let copy = try StateStore(layout: layout)
        try copy.transaction { tx in try tx.setValue(deviceID, forKey: .deviceID) }
    }

    /// Runs `body` outside an explicit transaction (each operation is atomic on its own).
    @discardableResult
    public func read<T>(_ body: (inout StateTransaction) throws -> T) throws -> T {
        try database.read { c in
            var tx = StateTransaction(connection: c)
            return try body(&tx)
        }
    }
}

/// The typed operations on `state.sqlite`, inside ``StateStore/transaction(_:)`` or ``StateStore/read(_:)``.
public struct StateTransaction {
    let connection: Database.Connection
}
