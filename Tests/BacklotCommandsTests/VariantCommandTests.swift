import BacklotBasics
import BacklotCommands
import BacklotTestSupport
import Foundation
import Testing

/// The packaging commands show a pack's variants: `evaluate` and `inspect` list them (and what
/// each device installs), `diff --device` counts one device's download, and `clip size --pack`
/// counts the largest variant.
@Suite struct VariantCommandTests {
    func run(_ args: [String]) -> (status: Int32, out: String, err: String) {
        let io = CapturedIO()
        let status = BacklotCLI.main(args, io: io)
        return (status, io.standardOutput, io.standardError)
    }

    func writeSource(_ dir: TemporaryDirectory, seed: UInt64) throws -> String {
        var g = SeededGenerator(seed: seed)
        try dir.write("src/Shared/level.dat", g.bytes(50_000))
        try dir.write("src/Textures#tcf_astc/rock.ktx", g.bytes(40_000))
        try dir.write("src/Textures#tcf_etc2/rock.ktx", g.bytes(30_000))
        try dir.write("src/Clip/Clip", "clip")
        return try dir.write(
            "manifest.json",
            #"{"assetPackID": "Game", "downloadPolicy": {"onDemand": {}}, "platforms": ["linux"], "sourceRoot": "src", "fileSelectors": [{"directory": "Shared"}, {"filePattern": "Textures*/*"}], "variants": {"textureFormat": {"default": "etc2"}}}"#
        )
    }

    @Test func evaluateInspectDiffAndClipSizeShowTheVariants() throws {
        let dir = try TemporaryDirectory("variant-commands")
        defer { dir.remove() }
        let manifest = try writeSource(dir, seed: 1)
        let evaluate = run(["evaluate", manifest])
        #expect(evaluate.status == 0, "\(evaluate.err)")
        #expect(evaluate.out.contains(#"variants: {"textureFormat":{"default":"etc2","values":["astc","etc2"]}}"#))
        #expect(run(["package", manifest, "-o", dir.at("v1.pack")]).status == 0)

        let inspect = run(["inspect", dir.at("v1.pack")])
        #expect(inspect.out.contains("variants      textureFormat astc, etc2 (default etc2)"), "\(inspect.out)")
        #expect(inspect.out.contains("textureFormat=astc: 2 files, "), "\(inspect.out)")
        let json = run(["inspect", "--json", dir.at("v1.pack")])
        let listing = try JSONDecoder().decode(Inspected.self, from: Data(json.out.utf8))
        #expect(
            listing.variants == [
                .init(textureFormat: "astc", fileCount: 2, installBytes: 90_000),
                .init(textureFormat: "etc2", fileCount: 2, installBytes: 80_000),
            ])

        // Version 2 changes only the ETC2 texture: an ASTC device downloads no chunk, an ETC2 one does.
        var g = SeededGenerator(seed: 2)
        try dir.write("src/Textures#tcf_etc2/rock.ktx", g.bytes(30_000))
        #expect(run(["package", manifest, "-o", dir.at("v2.pack")]).status == 0)
        let astc = run(["diff", "--json", "--device", "textureFormat=astc", dir.at("v1.pack"), dir.at("v2.pack")])
        let etc2 = run(["diff", "--json", "--device", "textureFormat=etc2", dir.at("v1.pack"), dir.at("v2.pack")])
        #expect(astc.status == 0 && etc2.status == 0, "\(astc.err) \(etc2.err)")
        let astcDiff = try JSONDecoder().decode(Diffed.self, from: Data(astc.out.utf8))
        let etc2Diff = try JSONDecoder().decode(Diffed.self, from: Data(etc2.out.utf8))
        #expect(astcDiff.downloadChunkCount == 0 && etc2Diff.downloadChunkCount > 0, "\(astc.out) \(etc2.out)")
        #expect(run(["diff", "--device", "textureFormat=astcc", dir.at("v1.pack"), dir.at("v2.pack")]).status == 2)

        // An App Clip with the pack counts its largest variant (ASTC's 90,000 bytes).
        let clip = run(["clip", "size", "--json", "--pack", dir.at("v1.pack"), dir.at("src/Clip")])
        #expect(clip.status == 0, "\(clip.err)")
        #expect(
            clip.out.contains(#""variant" : "textureFormat=astc""#)
                || clip.out.contains(#""variant": "textureFormat=astc""#), "\(clip.out)")
        let sized = try JSONDecoder().decode(ClipSized.self, from: Data(clip.out.utf8))
        #expect(sized.sizeBytes == 90_000 + 4 && sized.clipBytes == 4)
    }

    struct Inspected: Decodable {
        struct Variant: Decodable, Equatable {
            var textureFormat: String?
            var deviceTier: Int? = nil
            var fileCount: Int
            var installBytes: UInt64
        }
        let variants: [Variant]?
    }

    struct Diffed: Decodable {
        let downloadChunkCount: Int
    }

    struct ClipSized: Decodable {
        let sizeBytes: UInt64
        let clipBytes: UInt64
    }
}
