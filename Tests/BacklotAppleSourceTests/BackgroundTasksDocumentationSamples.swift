// swift-format-ignore-file
// (Apple's code is kept as its documentation writes it: only the import changed.)
// The app of Apple's BackgroundTasks documentation article "Refreshing and Maintaining Your App
// Using Background Tasks" (its ColorFeed sample): registering the refresh and the database
// cleaning tasks at launch, scheduling them, and handling them with an OperationQueue whose
// operations an expiration handler cancels. The app's own types (its persistent container and
// server, `Operations`) are stood in by the smallest code that compiles, marked "stand-in".
// Changed lines, and only these: `import BackgroundTasks` → `import BacklotTaskScheduler`.
import BacklotTaskScheduler
import Foundation

// stand-in: the sample's data layer and server.
final class PersistentContainer: @unchecked Sendable {}
final class Server: @unchecked Sendable {}
enum Operations {
    static func getOperationsToFetchLatestEntries(using context: PersistentContainer, server: Server) -> [Operation] {
        [BlockOperation {}]
    }
    static func deleteOldEntries(using context: PersistentContainer) -> Operation { BlockOperation {} }
}

final class ColorFeedAppDelegate: @unchecked Sendable {
    let persistentContainer = PersistentContainer()
    let server = Server()

    func application(didFinishLaunchingWithOptions launchOptions: [String: Any]?) -> Bool {
        BGTaskScheduler.shared.register(forTaskWithIdentifier: "com.example.apple-samplecode.ColorFeed.refresh", using: nil) { task in
             self.handleAppRefresh(task: task as! BGAppRefreshTask)
        }
        BGTaskScheduler.shared.register(forTaskWithIdentifier: "com.example.apple-samplecode.ColorFeed.db_cleaning", using: nil) { task in
             self.handleDatabaseCleaning(task: task as! BGProcessingTask)
        }
        return true
    }

    func applicationDidEnterBackground() {
        scheduleAppRefresh()
        scheduleDatabaseCleaningIfNeeded()
    }

    func scheduleAppRefresh() {
       let request = BGAppRefreshTaskRequest(identifier: "com.example.apple-samplecode.ColorFeed.refresh")
       request.earliestBeginDate = Date(timeIntervalSinceNow: 15 * 60)
       do {
          try BGTaskScheduler.shared.submit(request)
       } catch {
          print("Could not schedule app refresh: \(error)")
       }
    }

    func scheduleDatabaseCleaningIfNeeded() {
        let request = BGProcessingTaskRequest(identifier: "com.example.apple-samplecode.ColorFeed.db_cleaning")
        request.requiresNetworkConnectivity = false
        request.requiresExternalPower = true
        do {
            try BGTaskScheduler.shared.submit(request)
        } catch {
            print("Could not schedule database cleaning: \(error)")
        }
    }

    func handleAppRefresh(task: BGAppRefreshTask) {
       scheduleAppRefresh()
       let queue = OperationQueue()
       queue.maxConcurrentOperationCount = 1
       let context = persistentContainer
       let operations = Operations.getOperationsToFetchLatestEntries(using: context, server: server)
       let lastOperation = operations.last!
       task.expirationHandler = {
          queue.cancelAllOperations()
       }
       lastOperation.completionBlock = {
          task.setTaskCompleted(success: !lastOperation.isCancelled)
       }
       queue.addOperations(operations, waitUntilFinished: false)
    }

    func handleDatabaseCleaning(task: BGProcessingTask) {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let context = persistentContainer
        let cleanDatabaseOperation = Operations.deleteOldEntries(using: context)
        task.expirationHandler = {
            queue.cancelAllOperations()
        }
        cleanDatabaseOperation.completionBlock = {
            let success = !cleanDatabaseOperation.isCancelled
            task.setTaskCompleted(success: success)
        }
        queue.addOperation(cleanDatabaseOperation)
    }
}
