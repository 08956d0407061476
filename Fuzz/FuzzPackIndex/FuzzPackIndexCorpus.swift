import BacklotFormat
import Foundation

/// The seed corpus of the pack harness: small packs written by ``PackWriter`` (the code behind
/// `backlot package`) from tiny generated trees, so that the index holds several chunks, a chunk
/// shared by two files, an empty file and an executable.
enum FuzzPackIndexCorpus {
    static func write(to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let work = NSTemporaryDirectory() + "/backlot-fuzz-packs-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: work) }
        var state: UInt64 = 42
        func bytes(_ n: Int) -> [UInt8] {
            (0..<n).map { _ in
                state = state &* 6364136223846793005 &+ 1442695040888963407
                return UInt8(truncatingIfNeeded: state >> 33)
            }
        }
        let text = Array(String(repeating: "level data ", count: 600).utf8)
        let trees: [(String, String, [(String, [UInt8], Int)])] = [
            ("one-file.pack", #"{"assetPackID": "Tiny", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"file": "a.txt"}], "platforms": ["linux"]}"#,
             [("a.txt", Array("hello\n".utf8), 0o644)]),
            ("several-files.pack",
             #"{"assetPackID": "Level1", "downloadPolicy": {"essential": {"installationEventTypes": ["firstInstallation"]}}, "fileSelectors": [{"directory": "."}], "platforms": ["iOS", "linux"], "userInfo": {"n": 1}}"#,
             [("Levels/level1.dat", text, 0o644), ("Levels/level1-copy.dat", text, 0o644), ("noise.bin", bytes(9000), 0o644),
              ("empty", [], 0o644), ("bin/tool", bytes(300), 0o755)]),
        ]
        for (name, manifestText, files) in trees {
            let src = work + "/" + name + ".src"
            for (path, contents, mode) in files {
                let full = src + "/" + path
                try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                try Data(contents).write(to: URL(fileURLWithPath: full))
                try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: full)
            }
            let (manifest, _) = try AssetPackManifest.load(Array(manifestText.utf8), source: name)
            let selection = try SourceSelection(manifest: manifest, sourceRoot: src)
            _ = try PackWriter(options: .init(level: 19, jobs: 1, averageChunkSize: 4 << 10, overwrite: true))
                .write(manifest: manifest, selection: selection, to: directory + "/" + name)
        }
    }
}
