// A downloader extension for the agent's tests: it logs every call to CONTAINER/test-extension.log
// and behaves as CONTAINER/test-extension.json says:
//   {"mode": "normal" | "hang" | "crash", "decline": [pack IDs], "downloads": [{identifier, url, fileSize, essential}],
//    "moveTo": folder for finished files, "trySchedule": true (schedule a download during downloads(for:) and log the answer),
//    "crashOnFinished": true, "challenge": "credentials" (answers with "credentials": {user, password}) | "cancel"
//    (default: performDefaultHandling), "trustSHA256": hex SHA-256 of the one leaf certificate a server-trust challenge accepts}
//   further modes: "grandchild" (starts `sleep 600` in its process group with its standard output, logs "grandchild PID", then
//   answers), "grandchild-hang" (the same, then hangs), "flood" (prints "floodBytes" bytes, 64 MiB by default, then answers),
//   "empty-answer" (answers `{}` to shouldDownload), "fifo-answer" (makes its answer file a FIFO and exits 0),
//   "sleep" (sleeps "seconds" seconds, then answers), "swap-calls-folder" (moves CONTAINER/.extension-calls to
//   CONTAINER/moved-calls, makes a folder of its call's name holding keep.txt in the folder "elsewhere" names, and links
//   CONTAINER/.extension-calls there, then answers through the link)
import BacklotClient
import BacklotContainer
import BacklotCrypto
import BacklotExtension
import Foundation

#if canImport(Glibc)
import Glibc
#endif

@main struct TestExtension: ManagedDownloaderExtension {
    let container = ProcessInfo.processInfo.environment["BACKLOT_CONTAINER"] ?? "."
    var settings: [String: Any] {
        guard
            let data = FileManager.default.contents(
                atPath: ContainerLayout(root: container).appFile("test-extension.json")),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [:] }
        return object
    }

    func log(_ line: String) {
        let path = ContainerLayout(root: container).appFile("test-extension.log")
        if !FileManager.default.fileExists(atPath: path) { FileManager.default.createFile(atPath: path, contents: nil) }
        guard let h = FileHandle(forWritingAtPath: path) else { return }
        h.seekToEndOfFile()
        h.write(Data((line + "\n").utf8))
        try? h.close()
    }

    func behave() {
        switch settings["mode"] as? String {
        case "hang": while true { sleep(1) }
        case "crash": abort()
        case "grandchild", "grandchild-hang":
            var pid: pid_t = 0
            let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sleep"), strdup("600"), nil]
            if posix_spawn(&pid, "/bin/sleep", nil, nil, argv, environ) == 0 { log("grandchild \(pid)") }
            if settings["mode"] as? String == "grandchild-hang" { while true { sleep(1) } }
        case "flood":
            let total = settings["floodBytes"] as? Int ?? 64 << 20
            let line = [UInt8](repeating: UInt8(ascii: "x"), count: 1023) + [UInt8(ascii: "\n")]
            var written = 0
            while written < total {
                let n = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                written += n
            }
            log("flooded \(written)")
        case "fifo-answer":
            let reply = CommandLine.arguments[3]
            unlink(reply)
            log(mkfifo(reply, 0o600) == 0 ? "answered with a FIFO" : "mkfifo failed")
            exit(0)
        case "empty-answer":
            let reply = CommandLine.arguments[3]
            _ = FileManager.default.createFile(atPath: reply, contents: Data("{}".utf8))
            log("answered {}")
            exit(0)
        case "swap-calls-folder":
            let callFolder = (CommandLine.arguments[2] as NSString).deletingLastPathComponent
            let name = (callFolder as NSString).lastPathComponent
            let calls = ContainerLayout(root: container).extensionCallsFolder
            let elsewhere = settings["elsewhere"] as? String ?? "/nonexistent"
            let swapped =
                rename(calls, container + "/moved-calls") == 0 && mkdir(elsewhere + "/" + name, 0o700) == 0
                && FileManager.default.createFile(
                    atPath: elsewhere + "/" + name + "/keep.txt", contents: Data("kept".utf8))
                && symlink(elsewhere, calls) == 0
            log(swapped ? "swapped the calls folder" : "could not swap the calls folder")
        case "sleep":
            Thread.sleep(forTimeInterval: settings["seconds"] as? Double ?? 1)
        default: break
        }
    }

    func shouldDownload(_ assetPack: AssetPack) -> Bool {
        log("shouldDownload \(assetPack.id) \(assetPack.downloadPolicy.name)")
        behave()
        return !((settings["decline"] as? [String]) ?? []).contains(assetPack.id)
    }

    func downloads(for request: ContentRequest, manifestURL: URL, extensionInfo: AppExtensionInfo) -> Set<URLDownload> {
        let catalog = (try? Data(contentsOf: manifestURL)).map { $0.count } ?? -1
        let mode =
            ((try? FileManager.default.attributesOfItem(atPath: manifestURL.path))?[.posixPermissions] as? Int).map {
                String($0, radix: 8)
            } ?? "?"
        log(
            "downloads \(request.name) manifest=\(catalog > 0 ? "read" : "missing") mode=\(mode) remaining=\(extensionInfo.restrictedDownloadSizeRemaining.map(String.init) ?? "nil")"
        )
        // What Apple's AssetPackManifest reads of the copy: its packs, the language the agent's
        // preferred languages resolve to, and the archive downloads the request would make.
        if let manifest = try? AssetPackManifest(contentsOf: manifestURL, appGroupID: "group.com.example.test") {
            func ids(_ packs: some Sequence<String>) -> String { packs.sorted().joined(separator: ",") }
            let archives = manifest.allDownloads(for: request)
            log(
                "manifest \(request.name) packs=\(ids(manifest.assetPacks.map(\.id))) resolved=\(manifest.resolvedLanguage?.minimalIdentifier ?? "none") localized=\(ids(manifest.localizedAssetPacks.map(\.id))) archives=\(ids(archives.map(\.identifier))) absolute=\(archives.allSatisfy { $0.url.host != nil })"
            )
        }
        if settings["trySchedule"] as? Bool == true,
            let manager = try? DownloadManager(containerPath: container, handler: { _ in })
        {
            do {
                try manager.scheduleDownload(
                    URLDownload(identifier: "sneaky", url: URL(string: "https://127.0.0.1/x")!))
                log("schedule during downloads(for:): accepted")
            } catch {
                log("schedule during downloads(for:): refused: \(error)")
            }
        }
        if settings["tryForeground"] as? Bool == true,
            let manager = try? DownloadManager(containerPath: container, handler: { _ in })
        {
            do {
                try manager.startForegroundDownload(
                    URLDownload(identifier: "foreground", url: URL(string: "https://127.0.0.1/x")!))
                log("foreground from the extension: accepted")
            } catch let e as BackgroundDownloadError {
                log("foreground from the extension: refused \(e.code): \(e)")
            } catch {
                log("foreground from the extension: refused: \(error)")
            }
        }
        behave()
        let list = (settings["downloads"] as? [[String: Any]]) ?? []
        return Set(
            list.compactMap { d in
                guard let id = d["identifier"] as? String, let url = (d["url"] as? String).flatMap(URL.init(string:))
                else { return nil }
                return URLDownload(
                    identifier: id, url: url, fileSize: (d["fileSize"] as? Int).map(UInt64.init),
                    isEssential: d["essential"] as? Bool ?? false)
            })
    }

    func backgroundDownload(_ download: URLDownload, finishedWithFileURL fileURL: URL) {
        if settings["crashOnFinished"] as? Bool == true {
            log("finished \(download.identifier): crashing")
            abort()
        }
        let target =
            (settings["moveTo"] as? String ?? ContainerLayout(root: container).appFile("extension-received")) + "/"
            + download.identifier
        try? FileManager.default.createDirectory(
            atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let moved = (try? FileManager.default.moveItem(atPath: fileURL.path, toPath: target)) != nil
        log("finished \(download.identifier) moved=\(moved)")
    }

    func backgroundDownload(_ download: URLDownload, failedWithError error: any Error) {
        log("failed \(download.identifier): \(error)")
    }

    func backgroundDownload(
        _ download: URLDownload, didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        log(
            "challenge \(download.identifier) realm=\(challenge.protectionSpace.realm ?? "-") failures=\(challenge.previousFailureCount) method=\(challenge.protectionSpace.authenticationMethod)"
        )
        if let space = challenge.protectionSpace as? ServerTrustProtectionSpace {
            // "trustSHA256": the hex SHA-256 of the leaf certificate to trust (anything else is cancelled).
            let leaf = space.certificateChain.first.map { SHA256.hash(Array($0)).hex } ?? "-"
            log("server trust \(download.identifier) certificates=\(space.certificateChain.count) leaf=\(leaf)")
            return (leaf == settings["trustSHA256"] as? String ? .useCredential : .cancelAuthenticationChallenge, nil)
        }
        switch settings["challenge"] as? String {
        case "cancel": return (.cancelAuthenticationChallenge, nil)
        case "credentials":
            let c = settings["credentials"] as? [String: String] ?? [:]
            return (
                .useCredential,
                URLCredential(user: c["user"] ?? "", password: c["password"] ?? "", persistence: .forSession)
            )
        default: return (.performDefaultHandling, nil)
        }
    }
}
