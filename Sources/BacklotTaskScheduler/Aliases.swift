// Apple's names, so that code written against BackgroundTasks ports by changing the import.
public typealias BGTaskScheduler = TaskScheduler
public typealias BGTaskRequest = TaskRequest
public typealias BGAppRefreshTaskRequest = AppRefreshTaskRequest
public typealias BGProcessingTaskRequest = ProcessingTaskRequest
public typealias BGTask = BackgroundTask
public typealias BGAppRefreshTask = AppRefreshTask
public typealias BGProcessingTask = ProcessingTask
