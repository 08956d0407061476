import BacklotBasics
import BacklotCrypto
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotFormat

/// Variants (docs/format.md §3.2): the markers in paths, the manifest's `variants`, Play's folders,
/// what a device profile chooses, and packs whose variants cannot install as one tree.
@Suite struct PackVariantTests {
    /// A tree with shared files, two texture formats (as the manifest maps them) and Play's tier folders.
    func writeTree(_ dir: TemporaryDirectory) throws {
        var g = SeededGenerator(seed: 7)
        try dir.write("src/Levels/common.dat", g.bytes(40_000))
        try dir.write("src/Textures/ASTC/rock.ktx", g.bytes(30_000))
        try dir.write("src/Textures/ETC2/rock.ktx", g.bytes(30_000))
        try dir.write("src/Music#tier_0/theme.ogg", g.bytes(20_000))
        try dir.write("src/Music#tier_2/theme.ogg", g.bytes(25_000))
    }

    static let variantsJSON = """
        {"textureFormat": {"default": "etc2",
            "astc": [{"directorySource": "Textures/ASTC", "directoryDestination": "Textures"}],
            "etc2": [{"directorySource": "Textures/ETC2", "directoryDestination": "Textures"}]}}
        """

    func manifest(
        selectors: String = #"[{"directory": "Levels"}, {"filePattern": "Music*/*"}]"#, variants: String?
    )
        -> String
    {
        let extra = variants.map { #", "variants": \#($0)"# } ?? ""
        return
            #"{"assetPackID": "Game", "downloadPolicy": {"onDemand": {}}, "fileSelectors": \#(selectors), "platforms": ["linux"]\#(extra)}"#
    }

    func select(_ json: String, _ dir: TemporaryDirectory) throws -> SourceSelection {
        let (m, _) = try PackManifest.load(Array(json.utf8), source: "M.json")
        return try SourceSelection(manifest: m, sourceRoot: dir.at("src"))
    }

    @Test func markersArePlaysFolderSuffixesAndComeOffWhenInstalled() throws {
        let m = try #require(try VariantMarker.find(in: "Textures#tcf_astc/rocks/a.ktx"))
        #expect(m.dimension == .textureFormat && m.value == "astc" && m.installedPath == "Textures/rocks/a.ktx")
        let t = try #require(try VariantMarker.find(in: "a/b#tier_2"))
        #expect(t.dimension == .deviceTier && t.value == "2" && t.installedPath == "a/b")
        #expect(try VariantMarker.find(in: "plain/#hash/file") == nil)
        for bad in [
            "T#tcf_astcc/a", "T#tier_high/a", "T#tier_12/a", "#tcf_astc/a", "A#tcf_astc/B#tier_1/c",
            "T#tcf_astc#tcf_etc2/x", "T#tier_1#tcf_astc/x",
        ] {
            #expect(throws: BacklotError.self, "\(bad)") { try VariantMarker.find(in: bad) }
        }
    }

    @Test func aProfileGetsTheBestFormatItReadsElseTheDefaultAndTheHighestTierNotAboveIts() throws {
        let v = try PackVariants(
            textureFormats: ["etc2", "astc", "dxt1"], defaultTextureFormat: "etc2", deviceTiers: [2, 0])
        #expect(v.textureFormats == ["astc", "dxt1", "etc2"] && v.deviceTiers == [0, 2])
        let phone = try DeviceProfile(parsing: "textureFormat=astc+etc2,deviceTier=high")
        #expect(v.choice(for: phone) == VariantChoice(textureFormat: "astc", deviceTier: 2))
        let desktop = DeviceProfile(textureFormats: ["bc7", "dxt1"], deviceTier: 1)
        #expect(v.choice(for: desktop) == VariantChoice(textureFormat: "dxt1", deviceTier: 0))
        let unknownGPU = DeviceProfile(textureFormats: [], deviceTier: 9)
        #expect(v.choice(for: unknownGPU) == VariantChoice(textureFormat: "etc2", deviceTier: 2))
        let onlyHigh = try PackVariants(textureFormats: [], defaultTextureFormat: nil, deviceTiers: [2])
        #expect(onlyHigh.choice(for: DeviceProfile(textureFormats: [], deviceTier: 0)).deviceTier == 2)
        #expect(VariantChoice(name: "tcf_astc.tier_2") == VariantChoice(textureFormat: "astc", deviceTier: 2))
        #expect(VariantChoice(name: VariantChoice(textureFormat: "etc1").name)?.textureFormat == "etc1")
        #expect(VariantChoice(name: "tcf_nope") == nil)
        #expect(try PackVariants(json: v.json, source: "t") == v)
        #expect(throws: BacklotError.self) {
            try PackVariants(textureFormats: ["astc"], defaultTextureFormat: nil, deviceTiers: [])
        }
    }

    @Test func aDeviceProfileNamesWhatIsWrongInIt() throws {
        #expect(try DeviceProfile(parsing: "deviceTier=2").textureFormats.isEmpty)
        for (text, phrase) in [
            ("textureFormat=astcx", "not a texture format"), ("deviceTier=ultra", "not a device tier"),
            ("texturFormat=astc", "did you mean textureFormat"), ("astc", "not key=value"),
        ] {
            #expect {
                try DeviceProfile(parsing: text)
            } throws: { ($0 as? BacklotError)?.description.contains(phrase) == true }
        }
        let base = DeviceProfile(textureFormats: ["etc2"], deviceTier: 1)
        #expect(
            try DeviceProfile(parsing: "deviceTier=low", base: base)
                == DeviceProfile(textureFormats: ["etc2"], deviceTier: 0))
    }

    @Test func theManifestsVariantsAndPlaysFoldersMakeOnePackThatInstallsPerChoice() throws {
        let dir = try TemporaryDirectory("variants")
        defer { dir.remove() }
        try writeTree(dir)
        let json = manifest(variants: Self.variantsJSON)
        let selection = try select(json, dir)
        #expect(
            selection.files.map(\.packPath) == [
                "Levels/common.dat", "Music#tier_0/theme.ogg", "Music#tier_2/theme.ogg", "Textures#tcf_astc/rock.ktx",
                "Textures#tcf_etc2/rock.ktx",
            ])
        let variants = try #require(selection.variants)
        #expect(variants.textureFormats == ["astc", "etc2"] && variants.defaultTextureFormat == "etc2")
        #expect(variants.deviceTiers == [0, 2])

        let path = try SamplePack.build(in: dir, manifestJSON: json)
        let reader = try PackReader(path: path)
        #expect(reader.index.metadata.variants == variants)
        let astcHigh = try reader.index.selecting(VariantChoice(textureFormat: "astc", deviceTier: 2), source: "t")
        #expect(astcHigh.files.map(\.path) == ["Levels/common.dat", "Music/theme.ogg", "Textures/rock.ktx"])
        #expect(astcHigh.files[2].digest == SHA256.hash(try dir.read("src/Textures/ASTC/rock.ktx")))
        #expect(astcHigh.files[1].digest == SHA256.hash(try dir.read("src/Music#tier_2/theme.ogg")))
        let etcLow = try reader.index.selecting(VariantChoice(textureFormat: "etc2", deviceTier: 0), source: "t")
        #expect(etcLow.files[2].digest == SHA256.hash(try dir.read("src/Textures/ETC2/rock.ktx")))
        #expect(etcLow.files[0] == astcHigh.files[0], "the shared file is the same in both")
        // The metadata lists the variants after the manifest's keys; the same input makes the same bytes.
        #expect(
            reader.index.metadata.json.serialized().hasSuffix(
                #""variants":{"deviceTier":{"values":[0,2]},"textureFormat":{"default":"etc2","values":["astc","etc2"]}}}"#
            ))
        let again = try SamplePack.build(in: dir, manifestJSON: json, name: "again.pack")
        #expect(try dir.read("out.pack") == dir.read("again.pack") && again.hasSuffix("again.pack"))
    }

    @Test func filesOneDeviceWouldGetTwiceOrAsFileAndFolderAreRefusedWhenPackaging() throws {
        let dir = try TemporaryDirectory("variants-clash")
        defer { dir.remove() }
        try writeTree(dir)
        try dir.write("src/Shared/rock.ktx", "shared")
        try dir.write("src/Flat/Music", "a file where a variant needs a folder")
        let clashes: [(selectors: String, variants: String?, phrase: String)] = [
            // A shared file at a variant's installed path.
            (
                #"[{"fileSource": "Shared/rock.ktx", "fileDestination": "Textures/rock.ktx"}]"#, Self.variantsJSON,
                "would both install at \"Textures/rock.ktx\""
            ),
            // A texture format's file and a tier's file at one installed path.
            (
                #"[{"fileSource": "Shared/rock.ktx", "fileDestination": "Textures#tier_1/rock.ktx"}]"#,
                Self.variantsJSON,
                "on one device"
            ),
            // A shared file where a variant needs a folder.
            (
                #"[{"fileSource": "Flat/Music", "fileDestination": "Music"}, {"filePattern": "Music*/*"}]"#, nil,
                "where \"Music#tier_0/theme.ogg\""
            ),
            // Texture formats without a default.
            (
                #"[{"directory": "Levels"}]"#,
                #"{"textureFormat": {"astc": [{"directory": "Textures/ASTC"}]}}"#, "no default"
            ),
        ]
        for clash in clashes {
            #expect(Comment(rawValue: clash.phrase)) {
                _ = try select(manifest(selectors: clash.selectors, variants: clash.variants), dir)
            } throws: { error in
                let e = error as? BacklotError
                return e?.exitStatus == 2 && e?.description.contains(clash.phrase) == true
            }
        }
        // Two formats of one file never meet on a device: allowed.
        _ = try select(manifest(variants: Self.variantsJSON), dir)
    }

    @Test func theManifestsVariantsKeyIsCheckedLikeTheRest() throws {
        for (variants, phrase) in [
            (#"{"textureFormats": {}}"#, "did you mean \"textureFormat\"?"),
            (#"{"textureFormat": {"astcc": [{"directory": "a"}]}}"#, "not a texture format"),
            (#"{"deviceTier": {"default": "low"}}"#, "device tiers have no default"),
            (#"{"deviceTier": {"high": []}}"#, "non-empty array of selectors"),
            (#"{"deviceTier": {"high": [{"directory": "a"}], "2": [{"directory": "b"}]}}"#, "same deviceTier"),
            (#"[]"#, "must be an object of dimensions"),
        ] {
            let result = try PackManifest.parse(Array(manifest(variants: variants).utf8), source: "M.json")
            #expect(
                result.manifest == nil && result.errors.contains { "\($0)".contains(phrase) },
                "\(variants): \(result.errors)")
        }
    }

    @Test func aCraftedIndexWhoseVariantsDoNotMakeATreeIsRefusedWhenSelected() throws {
        let id = SHA256.hash(Array("x".utf8))
        let chunk = PackIndex.Chunk(id: id, offset: 64, compressedSize: 10, uncompressedSize: 1)
        func index(_ paths: [String], tiers: [Int]) throws -> PackIndex {
            let variants = try PackVariants(textureFormats: [], defaultTextureFormat: nil, deviceTiers: tiers)
            return PackIndex(
                metadata: PackMetadata(
                    assetPackID: try PackID("P"), downloadPolicy: .onDemand, platforms: [.linux], userInfo: nil,
                    language: nil, variants: variants),
                chunking: nil, chunks: [chunk],
                files: paths.map { PackIndex.File(path: $0, mode: 0o644, size: 1, digest: id, chunks: [0]) })
        }
        let choice = VariantChoice(deviceTier: 1)
        #expect(
            try index(["a#tier_1/x", "b"], tiers: [1]).selecting(choice, source: "t").files.map(\.path) == ["a/x", "b"])
        for (paths, tiers, phrase) in [
            (["a#tier_1/x", "a/x"], [1], "two files install at \"a/x\""),
            (["a", "a#tier_1/x"], [1], "\"a\" is a file"),
            (["a#tier_3/x"], [1], "do not list"),
        ] {
            #expect {
                try index(paths, tiers: tiers).selecting(choice, source: "t")
            } throws: { ($0 as? BacklotError)?.code == .corruptArchive && "\($0)".contains(phrase) }
        }
    }
}
