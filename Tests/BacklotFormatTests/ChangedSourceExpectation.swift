import BacklotBasics
import BacklotTestSupport
import Testing

@testable import BacklotFormat

/// Expects `body` to be refused because a source file changed since it was selected
/// (`invalidSource`, "changed while it was being packaged").
func expectRefusedAsChanged(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(sourceLocation: sourceLocation) {
        try body()
    } throws: { error in
        (error as? BacklotError)?.code == .invalidSource && "\(error)".contains("changed while it was being packaged")
    }
}

/// Expects packaging `selection` into `dir/out.pack` on two threads to be refused because a source
/// file changed since it was selected, and to leave no pack.
func expectPackagingRefusedAsChanged(
    _ manifest: PackManifest, _ selection: SourceSelection, in dir: TemporaryDirectory,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    expectRefusedAsChanged(
        {
            _ = try PackWriter(options: .init(jobs: 2)).write(
                manifest: manifest, selection: selection, to: dir.at("out.pack"))
        }, sourceLocation: sourceLocation)
    #expect(!FileSystem.exists(dir.at("out.pack")), sourceLocation: sourceLocation)
}
