// swift-format-ignore-file
// (Apple's code is kept as the seeds wrote it: only the import changed, see below.)
// An app written against Apple's Background Assets, run on Backlot by BacklotAppleSourceTests
// (AppleSampleAppTests) against a real `backlot serve`. The seed's snippets
// (managed-background-assets-2025) are kept as written, each inside a function of its own (the
// `func` line and its braces are added); the 2022 part uses Apple's documented declarations of
// BADownloadManager, BADownloadManagerDelegate and BAURLDownload.
// Changed lines, and only these: `import BackgroundAssets` → `import BacklotClient`.
//
// The container and configuration come from BACKLOT_CONTAINER and BACKLOT_CONFIG, as for any
// app; SAMPLE_URL and SAMPLE_SIZE name the file the 2022 part downloads.
import BacklotClient
import Synchronization

/// Seed, « Télécharger un pack de ressources »: the pack, its status updates, its download.
func downloadTutorial() async throws {
    let assetPack = try await AssetPackManager.shared.assetPack(withID: "Tutorial")
    // Await status updates for progress information
    let statusUpdates = AssetPackManager.shared.statusUpdates(forAssetPackWithID: "Tutorial")
    Task {
        for await statusUpdate in statusUpdates {
            // …
            _ = statusUpdate
        }
    }
    // Download the asset pack
    try await AssetPackManager.shared.ensureLocalAvailability(of: assetPack)
}

/// Seed, « Annuler un téléchargement »; the download it cancels is started between the seed's
/// first line and its loop (added lines marked), so that the loop sees it.
func cancelTutorialDownload() async -> Bool {
    let statusUpdates = AssetPackManager.shared.statusUpdates(forAssetPackWithID: "Tutorial")
    let download = Task { try await AssetPackManager.shared.ensureLocalAvailability(of: try await AssetPackManager.shared.assetPack(withID: "Tutorial")) }  // added
    for await statusUpdate in statusUpdates {
        if case .downloading(_, let progress) = statusUpdate {
            progress.cancel()
        }
    }
    return (try? await download.value) == nil  // added: true when the download was cancelled
}

/// Seed, « Lire des fichiers »; the sizes are printed (added) for the test.
func readVideo() throws {
    // Read a file into memory
    let videoData = try AssetPackManager.shared.contents(at: "Videos/Introduction.m4v")
    // Open a file descriptor
    let videoDescriptor = try AssetPackManager.shared.descriptor(for: "Videos/Introduction.m4v")
    defer {
        do {
            try videoDescriptor.close()
        } catch {
            // …
        }
    }
    print("contents \(videoData.count)")  // added
    print("descriptor \(lseek(videoDescriptor.fileDescriptor, 0, SEEK_END))")  // added
}

/// Seed, « Supprimer et retélécharger ».
func removeAndRedownload() async throws {
    // Remove the asset pack
    try await AssetPackManager.shared.remove(assetPackWithID: "Tutorial")
    // Redownload the asset pack
    let assetPack = try await AssetPackManager.shared.assetPack(withID: "Tutorial")
    try await AssetPackManager.shared.ensureLocalAvailability(of: assetPack)
}

/// The 2022 API: a delegate that moves the finished file (before returning, as Apple requires).
final class IntroDownloads: BADownloadManagerDelegate, @unchecked Sendable {
    let destination: URL
    let outcomes: AsyncStream<String>
    private let sink: AsyncStream<String>.Continuation
    private let progressSeen = Atomic<Bool>(false)

    init(destination: URL) {
        self.destination = destination
        (outcomes, sink) = AsyncStream<String>.makeStream()
    }

    func downloadDidBegin(_ download: BADownload) {
        print("began \(download.identifier) \(download.state == .downloading)")
    }

    func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite totalExpectedBytes: Int64
    ) {
        if !progressSeen.exchange(true, ordering: .relaxed) { print("progress \(totalExpectedBytes)") }
    }

    func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {
        do {
            try FileManager.default.moveItem(at: fileURL, to: destination)
            sink.yield("finished \(download.identifier) \(download.state == .finished)")
        } catch {
            sink.yield("move failed: \(error)")
        }
    }

    func download(_ download: BADownload, failedWithError error: any Error) {
        sink.yield("failed \(download.identifier): \(error)")
    }
}

func downloadIntro(url: URL, size: Int, container: String) async throws -> String {
    let manager = BADownloadManager.shared
    let downloads = IntroDownloads(destination: URL(fileURLWithPath: container + "/Intro.bin"))
    manager.delegate = downloads
    let download = BAURLDownload(
        identifier: "intro", request: URLRequest(url: url), essential: false, fileSize: size,
        applicationGroupIdentifier: "group.com.example.game", priority: .default)
    // Apple's handler form: schedule only what is not scheduled yet, holding exclusive control.
    manager.withExclusiveControl { acquiredLock, error in
        guard acquiredLock else {
            print("no exclusive control: \(String(describing: error))")
            return
        }
        do {
            let current = try manager.fetchCurrentDownloads()
            if !current.contains(where: { $0.identifier == download.identifier }) {
                try manager.scheduleDownload(download)
            }
        } catch {
            print("schedule failed: \(error)")
        }
    }
    // The form with a date, and the async form of iOS 27.
    manager.withExclusiveControl(beforeDate: Date(timeIntervalSinceNow: 30)) { acquiredLock, _ in
        print("beforeDate acquired \(acquiredLock)")
    }
    let scheduled = try await manager.withExclusiveControl { try manager.fetchCurrentDownloads().count }
    print("async form saw \(scheduled <= 1)")
    var outcome = "no outcome"
    for await line in downloads.outcomes {
        outcome = line
        break
    }
    manager.delegate = nil
    return outcome
}

let environment = ProcessInfo.processInfo.environment
let container = environment["BACKLOT_CONTAINER"] ?? "."
print("cancelled \(await cancelTutorialDownload())")
try await downloadTutorial()
print("downloaded \(AssetPackManager.shared.assetPackIsAvailableLocally(withID: "Tutorial"))")
try readVideo()
print("url \(AssetPackManager.shared.url(for: "Levels/1.txt").path)")
try await removeAndRedownload()
let status = try await AssetPackManager.shared.status(ofAssetPackWithID: "Tutorial")
print("status downloaded \(status.contains(.downloaded)) upToDate \(status.contains(.upToDate))")
let updates = try await AssetPackManager.shared.checkForUpdates()
print("updates \(updates.updatingIDs.count) removed \(updates.removedIDs.count)")
if let url = environment["SAMPLE_URL"].flatMap(URL.init(string:)), let size = environment["SAMPLE_SIZE"].flatMap(Int.init) {
    print(try await downloadIntro(url: url, size: size, container: container))
}
print("done")
exit(0)
