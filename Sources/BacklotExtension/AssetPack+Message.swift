import BacklotBasics
import BacklotClient
import BacklotFormat
import BacklotJSON

extension AssetPack {
    /// A pack as a `shouldDownload` call carries it: `{"id","downloadSize","version","digest",
    /// "downloadPolicy","userInfo","language"}` (docs/protocol.md).
    struct Message: Codable {
        private enum Keys: String, CodingKey {
            case id, downloadSize, version, digest, downloadPolicy, userInfo, language
        }
        let pack: AssetPack

        init(_ pack: AssetPack) { self.pack = pack }

        init(from decoder: any Decoder) throws {
            let source = ExtensionMessageCoding.source(decoder)
            let c = try decoder.container(keyedBy: Keys.self)
            let size = try c.checkedInteger(Int.self, forKey: .downloadSize, in: 0...Int.max, source: source)
            let version = try c.checkedInteger(Int.self, forKey: .version, in: 0...Int.max, source: source)
            let policy = try c.decodeIfPresent(JSONNode.self, forKey: .downloadPolicy).flatMap(
                DownloadPolicy.init(json:))
            guard let id = try? c.decode(String.self, forKey: .id), let size, let version,
                let digest = try? c.decode(String.self, forKey: .digest), let policy
            else {
                throw BacklotError(
                    .invalidInput,
                    "a pack in the extension call (\(c.codingPath.pathText)) needs an id, a downloadSize, a version, a digest and a valid downloadPolicy",
                    context: source)
            }
            let userInfo = try c.decodeIfPresent(JSONNode.self, forKey: .userInfo).flatMap {
                $0.kind == .null ? nil : $0
            }
            pack = AssetPack(
                id: id, downloadSize: size, version: version, userInfo: userInfo,
                language: try? c.decodeIfPresent(String.self, forKey: .language), downloadPolicy: policy, digest: digest
            )
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(pack.id, forKey: .id)
            try c.encode(pack.downloadSize, forKey: .downloadSize)
            try c.encode(pack.version, forKey: .version)
            try c.encode(pack.digest, forKey: .digest)
            try c.encode(pack.downloadPolicy.json, forKey: .downloadPolicy)
            try c.encode(pack.userInfo ?? JSONNode(.null), forKey: .userInfo)
            try c.encode(pack.languageIdentifier, forKey: .language)
        }
    }
}
