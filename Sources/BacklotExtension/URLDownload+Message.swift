import BacklotBasics
import BacklotClient
import Foundation

extension URLDownload {
    /// A download as a call or an answer carries it: `{"identifier","url","fileSize","essential","priority"}`
    /// (docs/protocol.md).
    struct Message: Codable {
        private enum Keys: String, CodingKey { case identifier, url, fileSize, essential, priority }
        let download: URLDownload

        init(_ download: URLDownload) { self.download = download }

        init(from decoder: any Decoder) throws {
            let source = ExtensionMessageCoding.source(decoder)
            let c = try decoder.container(keyedBy: Keys.self)
            guard let id = try? c.decode(String.self, forKey: .identifier), !id.isEmpty,
                let url = (try? c.decode(String.self, forKey: .url)).flatMap(URL.init(string:))
            else {
                throw BacklotError(
                    .invalidInput,
                    "a download (\(c.codingPath.pathText)) needs an identifier and a URL",
                    context: source)
            }
            download = URLDownload(
                identifier: id, url: url,
                fileSize: try c.checkedInteger(
                    UInt64.self, forKey: .fileSize, in: ExtensionCall.fileSizeRange, source: source),
                isEssential: (try? c.decodeIfPresent(Bool.self, forKey: .essential)) ?? false,
                priority: try c.checkedInteger(Int.self, forKey: .priority, source: source) ?? 0)
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(download.identifier, forKey: .identifier)
            try c.encode(download.url.absoluteString, forKey: .url)
            try c.encode(download.fileSize, forKey: .fileSize)
            try c.encode(download.isEssential, forKey: .essential)
            try c.encode(download.priority, forKey: .priority)
        }
    }
}
