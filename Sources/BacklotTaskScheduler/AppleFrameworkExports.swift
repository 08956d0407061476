// What `import BackgroundTasks` brings on Apple's platforms (Foundation: Date, TimeInterval),
// brought by `import BacklotTaskScheduler`, so that code written for Apple's framework builds by
// changing the import alone (docs/porting.md).
@_exported import Foundation
