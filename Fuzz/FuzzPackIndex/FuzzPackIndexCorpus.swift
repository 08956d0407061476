import BacklotCrypto
import BacklotFormat
import BacklotZstd
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
            let (manifest, _) = try PackManifest.load(Array(manifestText.utf8), source: name)
            let selection = try SourceSelection(manifest: manifest, sourceRoot: src)
            _ = try PackWriter(options: .init(level: 19, jobs: 1, averageChunkSize: 4 << 10, overwrite: true))
                .write(manifest: manifest, selection: selection, to: directory + "/" + name)
        }
        try writeVersionTwo(from: directory + "/several-files.pack", to: directory)
    }

    /// Version-2 seeds: the several-files pack's index with a small dictionary (same frames), and
    /// an index of 300 empty files whose paths share 1,000 bytes (front coding at work).
    static func writeVersionTwo(from packPath: String, to directory: String) throws {
        let pack = try PackReader(path: packPath)
        let samples = (0..<300).map { i in Array("level \(i): the data of the level, line \(i % 7)\n".utf8) }
        guard let dictionary = ZstdDictionary.train(samples: samples, capacity: 2 << 10) else { return }
        func write(_ index: PackIndex, frames: [UInt8], name: String) throws {
            let bytes = index.encoded
            let header = PackHeader(
                formatVersion: 2, indexOffset: UInt64(PackHeader.size + frames.count), indexLength: UInt64(bytes.count),
                indexDigest: SHA256.hash(bytes))
            try Data(header.encoded + frames + bytes).write(to: URL(fileURLWithPath: directory + "/" + name))
        }
        let all = try FileHandle(forReadingFrom: URL(fileURLWithPath: packPath)).readToEnd() ?? Data()
        let frames = Array(all[PackHeader.size..<Int(pack.header.indexOffset)])
        try write(
            PackIndex(
                metadata: pack.index.metadata, chunking: pack.index.chunking, chunks: pack.index.chunks,
                files: pack.index.files, dictionary: dictionary), frames: frames, name: "version-2.pack")
        let prefix = String(repeating: "p", count: 199) + "/" + String(repeating: "q", count: 199) + "/"
            + String(repeating: "r", count: 199) + "/" + String(repeating: "s", count: 199) + "/" + String(repeating: "t", count: 200)
        let empty = SHA256.hash([UInt8]())
        let files = (0..<300).map {
            PackIndex.File(path: prefix + String(format: "%04d", $0), mode: 0o644, size: 0, digest: empty, chunks: [Int]())
        }
        try write(
            PackIndex(metadata: pack.index.metadata, chunking: nil, chunks: [], files: files, dictionary: dictionary),
            frames: [], name: "version-2-shared-prefix.pack")
    }
}
