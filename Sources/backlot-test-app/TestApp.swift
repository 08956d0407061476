// An "app" for the agent's tests.
//   backlot-test-app --background-task ID        launched by the agent: runs the task (CONTAINER/test-app.json
//                                                {"task": "complete" | "fail" | "hang"}), logs to CONTAINER/test-app.log
//   backlot-test-app listen CONTAINER SECONDS    listens for URL download outcomes for SECONDS, logging each one
//                                                ("app finished ID moved=…", "app failed ID: …")
import BacklotClient
import BacklotContainer
import BacklotTaskScheduler
import Foundation
import Synchronization

func log(_ container: String, _ line: String) {
    let path = ContainerLayout(root: container).appFile("test-app.log")
    if !FileManager.default.fileExists(atPath: path) { FileManager.default.createFile(atPath: path, contents: nil) }
    guard let h = FileHandle(forWritingAtPath: path) else { return }
    h.seekToEndOfFile()
    h.write(Data((line + "\n").utf8))
    try? h.close()
}

let arguments = CommandLine.arguments
if arguments.count == 4, arguments[1] == "listen" {
    let container = arguments[2]
    // The manager, for its own event handler (set before it can deliver its first event).
    let box = Mutex<DownloadManager?>(nil)
    let manager = try DownloadManager(containerPath: container) { event in
        // As an app would: take the exclusive lock again inside the handler (it is re-entrant).
        _ = try? box.withLock { $0 }?.withExclusiveControl { () }
        if case .finished(let d, let url) = event {
            let target = ContainerLayout(root: container).appFile("app-received/" + d.identifier)
            try? FileManager.default.createDirectory(
                atPath: ContainerLayout(root: container).appFile("app-received"), withIntermediateDirectories: true)
            let moved = (try? FileManager.default.moveItem(atPath: url.path, toPath: target)) != nil
            log(container, "app finished \(d.identifier) moved=\(moved)")
        }
        if case .failed(let d, let error) = event { log(container, "app failed \(d.identifier): \(error)") }
    }
    box.withLock { $0 = manager }
    try manager.startListening(pollInterval: 0.02)
    Thread.sleep(forTimeInterval: Double(arguments[3]) ?? 1)
    try manager.stopListening()
    exit(0)
}

guard let container = ProcessInfo.processInfo.environment["BACKLOT_CONTAINER"] else {
    FileHandle.standardError.write(Data("backlot-test-app: BACKLOT_CONTAINER is not set\n".utf8))
    exit(2)
}
let presence = try AppPresence.markRunning(containerPath: container)
if let url = ProcessInfo.processInfo.environment["BACKLOT_TEST_FOREGROUND_URL"].flatMap(URL.init(string:)) {
    // What an app would try: promote a download to the foreground (refused in a background launch).
    let manager = try DownloadManager(containerPath: container) { _ in }
    do {
        try manager.startForegroundDownload(URLDownload(identifier: "foreground", url: url))
        log(container, "foreground: accepted")
        manager.waitUntilIdle()
    } catch let e as BackgroundDownloadError {
        log(container, "foreground: refused \(e.code)")
    }
}
let mode: String = {
    guard let data = FileManager.default.contents(atPath: ContainerLayout(root: container).appFile("test-app.json")),
        let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    else { return "complete" }
    return object["task"] as? String ?? "complete"
}()
let scheduler = TaskScheduler.shared
for id in scheduler.configuration.permittedIdentifiers.sorted() {
    scheduler.register(forTaskWithIdentifier: id, using: nil) { task in
        log(container, "ran \(task.identifier) (\(task is AppRefreshTask ? "refresh" : "processing"))")
        switch mode {
        case "fail": task.setTaskCompleted(success: false)
        case "hang": break
        default: task.setTaskCompleted(success: true)
        }
    }
}
let outcome = scheduler.runBackgroundLaunch()
log(container, "exit \(outcome?.rawValue ?? "nothing to run")")
withExtendedLifetime(presence) {}
