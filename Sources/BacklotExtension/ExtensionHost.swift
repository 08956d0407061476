import BacklotBasics
import BacklotClient
import BacklotJSON
import Foundation

/// The extension's side of a call: read it, call the extension, write the answer.
enum ExtensionHost {
    static func serve(_ ext: some DownloaderExtension, arguments: [String]) -> Int32 {
        guard arguments.count == 4, arguments[1] == "--backlot-extension-call" else {
            FileHandle.standardError.write(Data("this is a Backlot downloader extension; the agent runs it (backlot agent, or backlot simulate)\n".utf8))
            return 2
        }
        do {
            let bytes = try FileDescriptor.readWholeFile(arguments[2], atMost: 64 << 20, what: "the agent's call")
            let call = try ExtensionCall(json: try JSONReader(source: arguments[2]).read(bytes).root, source: arguments[2])
            var reply = ExtensionReply()
            switch call {
            case .shouldDownload(let packs):
                let managed = ext as? any ManagedDownloaderExtension
                let keep = packs.map { managed?.shouldDownload($0) ?? true }
                reply.accepted = zip(packs, keep).filter { $0.1 }.map(\.0.id)
                reply.declined = zip(packs, keep).filter { !$0.1 }.map(\.0.id)
            case .downloads(let request, let path, let info):
                reply.downloads = ext.downloads(for: request, manifestURL: URL(fileURLWithPath: path), extensionInfo: info)
                    .sorted { $0.identifier < $1.identifier }
            case .finished(let d, let path):
                ext.backgroundDownload(d, finishedWithFileURL: URL(fileURLWithPath: path))
            case .failed(let d, let message, let code):
                ext.backgroundDownload(d, failedWithError: DownloadManager.DeliveredError(code: code, message: message))
            }
            let out = arguments[3]
            try Data(reply.json.serialized().utf8).write(to: URL(fileURLWithPath: out + ".tmp"))
            guard rename(out + ".tmp", out) == 0 else { throw SystemCall.error("rename", path: out) }
            return 0
        } catch {
            FileHandle.standardError.write(Data("extension: \(error)\n".utf8))
            return 1
        }
    }
}
