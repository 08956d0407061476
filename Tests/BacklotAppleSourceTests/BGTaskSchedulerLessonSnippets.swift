// swift-format-ignore-file
// (Apple's code is kept as the seeds wrote it: only the import changed, see below.)
// The Swift snippets of the seed lesson bgtaskscheduler-lesson (« Tâches et actualisation en
// arrière-plan »), compiled against BacklotTaskScheduler. Changed lines, and only these:
//   `import BackgroundTasks` → `import BacklotTaskScheduler` (once, here: a Swift file imports at its top);
//   each snippet sits in an `enum LessonN { … }` of its own (those lines and `static` before each
//   `func`/`let` are added), since the lesson defines `handleRefresh` and `fetchLatest` several times.
import BacklotTaskScheduler

enum Lesson3 {
    // Info.plist:
    // BGTaskSchedulerPermittedIdentifiers = [
    //   "com.example.app.refresh",
    //   "com.example.app.cleanup"
    // ]
    static let ids = "declare every identifier in Info.plist"
}

enum Lesson4 {
    static func registerTasks() {
        BGTaskScheduler.shared.register(
            forTaskWithIdentifier: "com.example.app.refresh",
            using: nil) { task in
            Lesson9.handleRefresh(task as! BGAppRefreshTask)  // `Lesson9.` added: the lesson's final handleRefresh
        }
    }
}

enum Lesson5 {
    static func scheduleRefresh() {
        let request = BGAppRefreshTaskRequest(
            identifier: "com.example.app.refresh")
        request.earliestBeginDate = Date(
            timeIntervalSinceNow: 15 * 60)
        try? BGTaskScheduler.shared.submit(request)
    }
}

enum Lesson6 {
    static func handleRefresh(_ task: BGAppRefreshTask) {
        Lesson5.scheduleRefresh() // queue the next run first
        // ... then perform this run's work
    }
}

enum Lesson7 {
    static func handleRefresh(_ task: BGAppRefreshTask) {
        Lesson5.scheduleRefresh()
        Task {
            let ok = await fetchLatest()
            task.setTaskCompleted(success: ok)
        }
    }
    static func fetchLatest() async -> Bool { true }
}

enum Lesson8 {
    static func handle(_ task: BGAppRefreshTask) {
        let work = Task { await fetchLatest() }
        task.expirationHandler = {
            work.cancel() // stop before the OS suspends us
        }
    }
    static func fetchLatest() async -> Bool { true }
}

enum Lesson8b {
    static func scheduleCleanup() {
        let req = BGProcessingTaskRequest(
            identifier: "com.example.app.cleanup")
        req.requiresExternalPower = true
        req.requiresNetworkConnectivity = false
        try? BGTaskScheduler.shared.submit(req)
    }
}

enum Lesson9 {
    static func handleRefresh(_ task: BGAppRefreshTask) {
        Lesson5.scheduleRefresh()
        let work = Task { await fetchLatest() }
        task.expirationHandler = { work.cancel() }
        Task {
            let ok = await work.value
            task.setTaskCompleted(success: ok)
        }
    }
    static func fetchLatest() async -> Bool { true }
}
