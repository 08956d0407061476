import BacklotBasics
import BacklotStore
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotRepository

/// A metadata database belongs to the storage it was first opened with (issue #25 §5, F8): two
/// servers on one database, each with its own data folder, would each list versions whose
/// archives only the other holds. On SQLite (a database file shared by two folders) and PostgreSQL.
@Suite(.serialized) struct StorageRecordTests {
    @Test(arguments: Backend.databases) func aDatabaseRefusesAFolderItDoesNotRecord(_ backend: Backend) throws {
        let dir = try TemporaryDirectory("storage-record")
        defer { dir.remove() }
        let database: any MetadataDatabase =
            try backend.database("storage_record") ?? SQLiteMetadataDatabase(path: dir.at("shared.sqlite"))
        let first = try Repository(directory: RepositoryDirectory(path: dir.at("one")), database: database)
        try first.apps.create("com.example.game")
        // The same folder again: its record.
        _ = try Repository(directory: RepositoryDirectory(path: dir.at("one")), database: database)

        // Another folder: refused, naming the folder the database records and what to do.
        #expect {
            try Repository(directory: RepositoryDirectory(path: dir.at("two")), database: database)
        } throws: {
            guard let e = $0 as? BacklotError else { return false }
            return e.code == .conflict && e.message.contains(dir.at("one")) && e.message.contains(dir.at("two"))
                && (e.hint ?? "").contains("--storage") && (e.hint ?? "").contains("--adopt-storage")
        }

        // A copy of the folder carries its storage ID: the database accepts it.
        try FileManager.default.copyItem(atPath: dir.at("one"), toPath: dir.at("moved"))
        _ = try Repository(directory: RepositoryDirectory(path: dir.at("moved")), database: database)

        // Adopting another folder replaces the record (audited); the first is refused from then on.
        let adopted = try Repository(
            directory: RepositoryDirectory(path: dir.at("two")), database: database, adoptStorage: true)
        let entries = try adopted.audit.entries(action: "storage.adopt").entries
        #expect(entries.count == 1)
        #expect(entries.first?.details["to"]?.contains(dir.at("two")) == true)
        #expect(throws: BacklotError.self) {
            try Repository(directory: RepositoryDirectory(path: dir.at("one")), database: database)
        }
        #expect(try adopted.apps.ids() == ["com.example.game"])  // the metadata itself is untouched
    }

    @Test func aStorageIDThatIsNotAUUIDIsRefusedWithWhatToDo() throws {
        let dir = try TemporaryDirectory("storage-id")
        defer { dir.remove() }
        let folder = try RepositoryDirectory(path: dir.at("data"))
        let id = try folder.storageID()
        #expect(UUID(uuidString: id) != nil)
        #expect(try folder.storageID() == id)
        try RepositoryDirectory.writeSecret("not a uuid\n", to: folder.storageIDPath)
        #expect { try folder.storageID() } throws: {
            guard let e = $0 as? BacklotError else { return false }
            return e.code == .invalidInput && e.context == folder.storageIDPath
        }
    }
}
