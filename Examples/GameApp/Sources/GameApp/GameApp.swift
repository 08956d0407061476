// The game: it makes sure its level pack is on the device and reads a level from it, and it
// registers a background refresh task that the Backlot agent runs while the game is closed.
//
//   GameApp CATALOG_URL ROOT_PUB [CA_FILE]     the game, opened by the player
//   (launched by the agent with --background-task ID for a due task)
//
// The container folder comes from BACKLOT_CONTAINER (the agent sets it; set it when you run the
// game yourself).
import BacklotClient
import BacklotTaskScheduler
import Foundation

let refreshTask = "com.example.game.refresh"

@main struct GameApp {
    static func main() async throws {
        guard let container = ProcessInfo.processInfo.environment["BACKLOT_CONTAINER"] else {
            FileHandle.standardError.write(Data("GameApp: set BACKLOT_CONTAINER to the game's container folder\n".utf8))
            exit(2)
        }
        let presence = try AppPresence.markRunning(containerPath: container)
        defer { withExtendedLifetime(presence) {} }

        // The background task: register its handler at every start, as on iOS.
        let scheduler = TaskScheduler.shared
        scheduler.register(forTaskWithIdentifier: refreshTask, using: nil) { task in
            note(container, "refresh task ran")
            task.setTaskCompleted(success: true)
        }
        if CommandLine.arguments.contains("--background-task") {
            _ = scheduler.runBackgroundLaunch()  // launched by the agent: run what is due, then exit
            return
        }

        let arguments = CommandLine.arguments.dropFirst().filter { !$0.hasPrefix("--") }
        guard arguments.count >= 2, let catalog = URL(string: arguments[arguments.startIndex]) else {
            FileHandle.standardError.write(Data("usage: GameApp CATALOG_URL ROOT_PUB [CA_FILE]\n".utf8))
            exit(2)
        }
        let manager = try AssetPackManager(
            configuration: .init(
                containerPath: container, catalogURL: catalog, trustedKeyFile: arguments[arguments.startIndex + 1],
                caFile: arguments.count > 2 ? arguments[arguments.startIndex + 2] : nil))
        let levels = try await manager.assetPack(withID: "Levels")
        try await manager.ensureLocalAvailability(of: levels)
        let level = try manager.contents(at: "Levels/1.txt")
        print("level 1: \(String(decoding: level, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))")

        // Ask for a refresh in the background, from now on.
        let request = AppRefreshTaskRequest(identifier: refreshTask)
        request.earliestBeginDate = Date()
        try scheduler.submit(request)
        print("refresh task submitted")
    }
}

/// A line in CONTAINER/example.log, where the example's parts say what they did.
func note(_ container: String, _ line: String) {
    let path = container + "/example.log"
    if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
    if let handle = FileHandle(forWritingAtPath: path) {
        handle.seekToEndOfFile()
        handle.write(Data((line + "\n").utf8))
        try? handle.close()
    }
}
