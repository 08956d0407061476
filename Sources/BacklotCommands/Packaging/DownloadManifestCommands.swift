import BacklotBasics
import BacklotFormat
import BacklotJSON
import Foundation

/// What a download-manifest entry is made from: a `.pack`, or an `.aar` with its manifest beside it.
struct ManifestInput {
    let id: String
    let size: UInt64
    let policy: DownloadPolicy
    let platforms: [Platform]
    let userInfo: JSONNode?

    static func read(_ path: String) throws -> ManifestInput {
        if path.hasSuffix(".aar") {
            let manifestPath = String(path.dropLast(4)) + ".json"
            guard FileSystem.exists(manifestPath) else {
                throw BacklotError(
                    .invalidInput, "no manifest beside the archive (looked for \(manifestPath))", context: path,
                    hint: "put the manifest you gave ba-package next to it with the same name and a .json extension")
            }
            let (m, _) = try PackManifest.load(path: manifestPath)
            let size = try AppleArchiveHeader.check(fileAt: path).size
            return ManifestInput(
                id: m.assetPackID.rawValue, size: size, policy: m.downloadPolicy, platforms: m.platforms,
                userInfo: m.userInfo)
        }
        let pack = try PackReader(path: path)
        let m = pack.index.metadata
        return ManifestInput(
            id: m.assetPackID.rawValue, size: pack.fileSize, policy: m.downloadPolicy, platforms: m.platforms,
            userInfo: m.userInfo)
    }
}

/// `backlot download-manifest create …`: Apple's self-hosted download manifest, offline.
struct DownloadManifestCreateCommand: Command {
    static let spec = CommandSpec(
        name: "download-manifest create",
        summary: "Write Apple's self-hosted download manifest for packs (as ba-package download-manifest create does).",
        discussion: """
            Each PACK is a .pack, or an .aar with the manifest given to ba-package beside it (NAME.aar + NAME.json).
            Pack URLs are the base URL + "/" + the pack ID; serve each archive there. Versions default to 0.
            """,
        arguments: [.init("PACK", help: "Archives to list.", repeats: true)],
        options: [baseURL, platform, versions, output, force, jsonFlag])
    static let baseURL = Option<String>(
        "download-base-url", "URL", help: "Where the archives are served.",
        expected: "an absolute http(s) URL", check: { $0.hasPrefix("https://") || $0.hasPrefix("http://") })
    static let platform = Option<String>(
        "platform", "PLATFORM", help: "ios, macos, tvos or visionos; packs not built for it are left out.")
    static let versions = Option<[Int]>(
        "asset-pack-versions", "N,N…", help: "Versions, in the order of the packs (default 0 each).",
        expected: "whole numbers separated by commas", check: { $0.allSatisfy { $0 >= 0 } })
    static let output = Option<String>("output", "FILE", short: "o", help: "Where to write the manifest.")
    static let force = Flag("force", help: "Replace FILE if it exists.")

    static func platform(_ text: String) throws -> Platform {
        guard
            let p = [Platform.iOS, .macOS, .tvOS, .visionOS].first(where: {
                $0.rawValue.lowercased() == text.lowercased()
            })
        else {
            throw BacklotError(
                .usage, "--platform takes ios, macos, tvos or visionos, not '\(text)'",
                context: "backlot download-manifest")
        }
        return p
    }

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let base = arguments[baseURL]
        let platform = try platform(arguments[Self.platform])
        let output = arguments[Self.output]
        let versions = arguments[Self.versions]
        guard versions.count <= arguments.positionals.count else {
            throw BacklotError(
                .usage, "\(versions.count) versions for \(arguments.positionals.count) packs",
                context: "--asset-pack-versions")
        }
        var manifest = AppleDownloadManifest()
        for (i, path) in arguments.positionals.enumerated() {
            let input = try ManifestInput.read(path)
            guard input.platforms.contains(platform) else {
                warn("\(path): \(input.id) is not built for \(platform.rawValue); left out", io: io)
                continue
            }
            if manifest.assetPacks.contains(where: { $0.id == input.id }) {
                throw BacklotError(.invalidInput, "the pack ID \(input.id) is given twice", context: path)
            }
            manifest.set(
                AppleDownloadManifest.Entry(
                    id: input.id, baseURL: base, version: i < versions.count ? versions[i] : 0,
                    downloadSize: input.size, downloadPolicy: input.policy, userInfo: input.userInfo))
        }
        let file = try AtomicFile(path: output, overwrite: arguments[force])
        try file.descriptor.write(Array(manifest.encoded.utf8))
        try file.commit()
        if arguments[jsonFlag] {
            try io.outJSON(
                Output(
                    output: output, platform: platform.rawValue,
                    packs: manifest.assetPacks.map { .init(pack: $0.id, version: $0.version) }))
            return
        }
        io.out(
            "Wrote \(output) with \(manifest.assetPacks.count) pack\(manifest.assetPacks.count == 1 ? "" : "s") for \(platform.rawValue).\n"
        )
    }
}

/// `backlot download-manifest update FILE PACKS…`: bumps the version of each pack given (adds new ones at 0).
struct DownloadManifestUpdateCommand: Command {
    static let spec = CommandSpec(
        name: "download-manifest update",
        summary:
            "Update a download manifest in place: each pack given gets its new size and its version increased by one (new packs start at 0).",
        arguments: [
            .init("MANIFEST", help: "The download manifest to update."),
            .init("PACK", help: "Archives that changed.", repeats: true),
        ],
        options: [DownloadManifestCreateCommand.baseURL, jsonFlag])

    static func run(_ arguments: ParsedArguments, io: any CommandIO) throws {
        let path = arguments.positionals[0]
        guard arguments.positionals.count > 1 else {
            throw BacklotError(
                .usage, "missing argument PACK (archives that changed)", context: "backlot download-manifest update")
        }
        let base = arguments[DownloadManifestCreateCommand.baseURL]
        var changes: [Output.Change] = []
        let bytes = try FileDescriptor.readWholeFile(path, atMost: 64 << 20, what: "the download manifest")
        var manifest = try AppleDownloadManifest.decode(bytes, source: path)
        for pack in arguments.positionals.dropFirst() {
            let input = try ManifestInput.read(pack)
            let previous = manifest.assetPacks.first { $0.id == input.id }?.version
            // The version read from the file may be Int.max: the next one is an error naming it, not a trap.
            let next =
                try previous.map {
                    try CheckedInteger.add($0, 1, "the next version of \(input.id) after \($0)", context: path)
                } ?? 0
            manifest.set(
                AppleDownloadManifest.Entry(
                    id: input.id, baseURL: base, version: next,
                    downloadSize: input.size, downloadPolicy: input.policy, userInfo: input.userInfo))
            changes.append(Output.Change(pack: input.id, from: previous, version: next))
            if !arguments[jsonFlag] {
                io.out("\(input.id): version \(previous.map { "\($0) -> \(next)" } ?? "0 (new)")\n")
            }
        }
        let file = try AtomicFile(path: path, overwrite: true)
        try file.descriptor.write(Array(manifest.encoded.utf8))
        try file.commit()
        if arguments[jsonFlag] {
            try io.outJSON(Output(output: path, packs: changes))
        }
    }
}

extension DownloadManifestCreateCommand {
    /// `download-manifest create --json`.
    struct Output: Encodable {
        struct Pack: Encodable {
            let pack: String
            let version: Int
        }
        let output: String
        let platform: String
        let packs: [Pack]
    }
}

extension DownloadManifestUpdateCommand {
    /// `download-manifest update --json`: each pack's version before (null: new) and now.
    struct Output: Encodable {
        struct Change: Encodable {
            let pack: String
            @NullWhenAbsent var from: Int?
            let version: Int
        }
        let output: String
        let packs: [Change]
    }
}
