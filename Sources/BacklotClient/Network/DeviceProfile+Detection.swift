import BacklotBasics
import BacklotFormat
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension DeviceProfile {
    /// This device's profile, detected once per process: the texture formats its GPU reads, from
    /// `vulkaninfo`'s features, else from the OpenGL (ES) extensions `eglinfo` or `glxinfo` list
    /// (none found: only uncompressed textures, so a pack's default format); and its tier from
    /// memory and cores (``tier(memoryBytes:cores:)``). Each program is given 5 seconds.
    ///
    /// An app overrides it with ``AssetPackManager/Configuration/deviceProfile`` (the
    /// configuration key `BacklotDeviceProfile`), a command with `backlot fetch --device`.
    public static let detected: DeviceProfile = {
        var formats: [String] = []
        for (tool, arguments) in [("vulkaninfo", []), ("eglinfo", []), ("glxinfo", ["-B", "-l"])] where formats.isEmpty
        {
            guard let executable = ChildProcess.findExecutable(tool),
                let outcome = try? ChildProcess.run(
                    executable: executable, arguments: arguments, environment: ProcessInfo.processInfo.environment,
                    until: .now + .seconds(5), keepingLast: 16 << 20),
                outcome.succeeded
            else { continue }
            let text = String(decoding: outcome.output, as: UTF8.self)
            formats = tool == "vulkaninfo" ? textureFormats(vulkaninfo: text) : textureFormats(glExtensions: text)
        }
        let pages = sysconf(Int32(_SC_PHYS_PAGES))
        let pageSize = sysconf(Int32(_SC_PAGESIZE))
        let memory = pages > 0 && pageSize > 0 ? UInt64(pages) &* UInt64(pageSize) : 0
        return DeviceProfile(
            textureFormats: formats,
            deviceTier: tier(memoryBytes: memory, cores: ProcessInfo.processInfo.activeProcessorCount))
    }()

    /// The detected profile with what `text` sets (`textureFormat=astc,deviceTier=high`; a key left
    /// out stays detected), as a configuration key or an option gives it.
    /// - Throws: ``BacklotError`` with `code`, its message starting with `label` (the key or option
    ///   that gave `text`), naming what is wrong.
    public static func detected(
        overriddenBy text: String, label: String, code: BacklotError.Code = .invalidInput, context: String? = nil
    ) throws -> DeviceProfile {
        do {
            return try DeviceProfile(parsing: text, base: .detected)
        } catch let e as BacklotError {
            throw BacklotError(code, "\(label): \(e.message)", context: context ?? e.context, hint: e.hint)
        }
    }

    /// The texture formats a GPU reads by `vulkaninfo`'s `VkPhysicalDeviceFeatures`:
    /// `textureCompressionASTC_LDR` (astc), `textureCompressionBC` (bc7 and dxt1),
    /// `textureCompressionETC2` (etc2 and etc1, which ETC2 decoders read).
    public static func textureFormats(vulkaninfo text: String) -> [String] {
        var formats: [String] = []
        for line in text.split(whereSeparator: \.isNewline) {
            let parts = line.split(separator: "=").map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, parts[1] == "true" || parts[1] == "1" else { continue }
            switch parts[0] {
            case "textureCompressionASTC_LDR": formats.append("astc")
            case "textureCompressionBC": formats += ["bc7", "dxt1"]
            case "textureCompressionETC2": formats += ["etc2", "etc1"]
            default: break
            }
        }
        return TextureFormat.preferenceOrder.filter(Set(formats).contains)
    }

    /// The texture formats an OpenGL (ES) implementation reads, by the extensions it lists.
    public static func textureFormats(glExtensions text: String) -> [String] {
        let extensions: [(String, [String])] = [
            ("GL_KHR_texture_compression_astc_ldr", ["astc"]),
            ("GL_ARB_texture_compression_bptc", ["bc7"]), ("GL_EXT_texture_compression_bptc", ["bc7"]),
            ("GL_EXT_texture_compression_s3tc", ["dxt1"]), ("GL_EXT_texture_compression_dxt1", ["dxt1"]),
            ("GL_ARB_ES3_compatibility", ["etc2", "etc1"]), ("GL_OES_compressed_ETC2_RGB8_texture", ["etc2", "etc1"]),
            ("GL_OES_compressed_ETC1_RGB8_texture", ["etc1"]), ("GL_IMG_texture_compression_pvrtc", ["pvrtc"]),
            ("GL_AMD_compressed_ATC_texture", ["atc"]), ("GL_AMD_compressed_3DC_texture", ["3dc"]),
            ("GL_EXT_texture_compression_latc", ["latc"]), ("GL_OES_compressed_paletted_texture", ["paletted"]),
        ]
        var formats = Set<String>()
        let words = Set(text.split { $0 == " " || $0 == "," || $0.isNewline || $0 == "\t" }.map(String.init))
        for (name, found) in extensions where words.contains(name) { formats.formUnion(found) }
        return TextureFormat.preferenceOrder.filter(formats.contains)
    }

    /// A device's tier by its memory and cores: 2 (high) with at least 6 GiB and 4 cores, 1
    /// (medium) with at least 3 GiB and 2 cores, else 0 (low). Memory is what the kernel reports,
    /// a little under what is fitted, so the bounds are 5.5 and 2.75 GiB.
    public static func tier(memoryBytes: UInt64, cores: Int) -> Int {
        let gib = Double(memoryBytes) / Double(1 << 30)
        if gib >= 5.5 && cores >= 4 { return 2 }
        if gib >= 2.75 && cores >= 2 { return 1 }
        return 0
    }
}
