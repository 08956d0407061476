import BacklotBasics
import BacklotFormat
import BacklotJSON
import Testing

/// What a server keeps of an Apple-archive upload's manifest, and reads back to check the archive.
struct UploadManifestTests {
    static let text = #"""
        {"assetPackID": "Levels", "downloadPolicy": {"onDemand": {}}, "platforms": ["linux"],
         "fileSelectors": [{"directory": "Levels"}, {"file": "intro.txt"}], "sourceRoot": "/home/me/game"}
        """#

    @Test func theKeptTextHoldsTheMetadataAndTheSelectorsOnly() throws {
        let json = try JSONReader(source: "manifest").read(Self.text).root
        let (parsed, _) = try PackManifest.load(Array(Self.text.utf8), source: "manifest")
        let kept = UploadManifest.keptText(of: json, parsed: parsed)
        #expect(!kept.contains("sourceRoot"), "a packaging instruction of the uploader's machine: \(kept)")
        let back = try #require(try UploadManifest.selectorsManifest(kept, source: "kept"))
        #expect(back.assetPackID == parsed.assetPackID)
        #expect(back.fileSelectors == parsed.fileSelectors)
        #expect(back.downloadPolicy == parsed.downloadPolicy)
    }

    @Test func aTextKeptBeforeSelectorsWereHasNoneToCheck() throws {
        let (parsed, _) = try PackManifest.load(Array(Self.text.utf8), source: "manifest")
        let metadataOnly = PackMetadata(parsed).json.serialized()
        #expect(try UploadManifest.selectorsManifest(metadataOnly, source: "kept") == nil)
        #expect(throws: BacklotError.self) { try UploadManifest.selectorsManifest("{not json", source: "kept") }
    }
}
