import BacklotCrypto
import BacklotFormat
import BacklotZstd
import Foundation

/// The base pack every fuzzed delta is read against: made once per process by ``PackWriter``
/// from a fixed tree (the same bytes each time), its index bytes and its chunks by ID kept in
/// memory. The seed deltas lead from it to edited versions of the tree.
final class FuzzPackDeltaBase: Sendable {
    let index: [UInt8]
    let decoded: PackIndex
    let chunks: [SHA256Digest: [UInt8]]

    static let shared: FuzzPackDeltaBase? = try? FuzzPackDeltaBase()

    private init() throws {
        let work = NSTemporaryDirectory() + "/backlot-fuzz-delta-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: work) }
        let pack = try Self.build(Self.tree(edit: 0), in: work, name: "base.pack")
        index = try pack.indexBytes()
        decoded = pack.index
        let d = ZstdDecompressor()
        var chunks: [SHA256Digest: [UInt8]] = [:]
        for (i, c) in pack.index.chunks.enumerated() { chunks[c.id] = try pack.readChunk(i, using: d) }
        self.chunks = chunks
    }

    /// The tree's files; `edit` > 0 changes a few bytes in some of them (and adds a file).
    static func tree(edit: Int) -> [(String, [UInt8])] {
        var state: UInt64 = 7
        func noise(_ n: Int) -> [UInt8] {
            (0..<n).map { _ in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return UInt8(truncatingIfNeeded: state >> 33)
            }
        }
        var text = Array(String(repeating: "the level's data, line after line; ", count: 400).utf8)
        var blob = noise(20_000)
        if edit > 0 {
            for k in 0..<edit { text[(k * 997) % text.count] = UInt8(ascii: "X") }
            blob.replaceSubrange(5_000..<5_016, with: [UInt8](repeating: UInt8(edit), count: 16))
        }
        var files = [("levels/one.txt", text), ("blob.bin", blob), ("empty", [])]
        if edit > 1 { files.append(("levels/new.txt", Array("new in version \(edit)\n".utf8))) }
        return files
    }

    static func build(_ files: [(String, [UInt8])], in work: String, name: String) throws -> PackReader {
        let src = work + "/" + name + ".src"
        for (path, contents) in files {
            let full = src + "/" + path
            try FileManager.default.createDirectory(
                atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(contents).write(to: URL(fileURLWithPath: full))
        }
        let (manifest, _) = try PackManifest.load(
            Array(
                #"{"assetPackID":"Delta","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"directory":"."}],"platforms":["linux"]}"#
                    .utf8), source: name)
        let selection = try SourceSelection(manifest: manifest, sourceRoot: src)
        _ = try PackWriter(options: .init(level: 19, jobs: 1, averageChunkSize: 4 << 10, overwrite: true))
            .write(manifest: manifest, selection: selection, to: work + "/" + name)
        return try PackReader(path: work + "/" + name)
    }

    /// Writes deltas from the base to three edited versions into `directory` (version 3 when they
    /// have early entries, else 2; the
    /// `delta-edit-N.delta` seeds beside them are the version-1 deltas an earlier build wrote).
    static func writeCorpus(to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let work = NSTemporaryDirectory() + "/backlot-fuzz-delta-corpus-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: work) }
        let base = try build(tree(edit: 0), in: work, name: "base.pack")
        for edit in 1...3 {
            let target = try build(tree(edit: edit), in: work, name: "v\(edit).pack")
            let delta = try DeltaBuilder().build(base: base, target: target)
            try Data(delta.bytes).write(to: URL(fileURLWithPath: directory + "/delta-v2-edit-\(edit).delta"))
        }
    }
}
