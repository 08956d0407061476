import BacklotBasics
import BacklotFormat
import Foundation

/// Builds small source trees and packs for tests.
public enum SamplePack {
    /// A manifest with one `directory` selector over the whole root.
    public static func manifest(
        id: String = "Sample", selectors: String = #"[{"directory": "."}]"#,
        policy: String = #"{"onDemand": {}}"#, platforms: String = #"["linux"]"#, language: String? = nil
    ) -> String {
        let localized = language.map { #", "language": "\#($0)""# } ?? ""
        return
            #"{"assetPackID": "\#(id)", "downloadPolicy": \#(policy), "fileSelectors": \#(selectors), "platforms": \#(platforms)\#(localized)}"#
    }

    /// Writes a small mixed tree (text, random bytes, a duplicate, an empty file, an executable).
    public static func writeTree(in dir: TemporaryDirectory, seed: UInt64 = 42) throws {
        var g = SeededGenerator(seed: seed)
        try dir.write("src/readme.txt", g.text(20_000))
        try dir.write("src/Textures/noise.bin", g.bytes(300_000))
        let big = g.text(400_000)
        try dir.write("src/Levels/level1.dat", big)
        try dir.write("src/Levels/level1-copy.dat", big)
        try dir.write("src/empty", [])
        try dir.write("src/bin/tool", g.bytes(5000), mode: 0o755)
    }

    /// Packages `dir/src` with `manifestJSON` into `dir/name`, returning the pack path.
    @discardableResult
    public static func build(
        in dir: TemporaryDirectory, manifestJSON: String = manifest(), name: String = "out.pack",
        jobs: Int = 2, level: Int32 = 3, averageChunkSize: Int = 16 << 10, sourceRoot: String? = nil,
        dictionary: Bool = true
    ) throws -> String {
        let (m, _) = try PackManifest.load(Array(manifestJSON.utf8), source: "manifest.json")
        let selection = try SourceSelection(manifest: m, sourceRoot: sourceRoot ?? dir.at("src"))
        let out = dir.at(name)
        _ = try PackWriter(
            options: .init(
                level: level, jobs: jobs, averageChunkSize: averageChunkSize, overwrite: true, dictionary: dictionary)
        )
        .write(manifest: m, selection: selection, to: out)
        return out
    }
}
