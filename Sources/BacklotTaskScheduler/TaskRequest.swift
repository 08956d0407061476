import Foundation
import Synchronization

/// A request to launch the app in the background to run a task (Apple's `BGTaskRequest`).
///
/// Use one of the two concrete kinds, ``AppRefreshTaskRequest`` or ``ProcessingTaskRequest``, and
/// hand it to ``TaskScheduler/submit(_:)``. Requests are values the scheduler copies: changing one
/// after submitting it changes nothing until it is submitted again.
///
/// ```swift
/// let request = AppRefreshTaskRequest(identifier: "com.example.game.refresh")
/// request.earliestBeginDate = Date(timeIntervalSinceNow: 15 * 60)
/// try TaskScheduler.shared.submit(request)
/// ```
///
/// Its mutable properties (as Apple declares them) are kept behind a `Mutex`, so a request may be
/// shared between threads: the class is `@unchecked Sendable` only because Swift does not let a
/// class that can be subclassed check it.
// Safe because: every mutable property is behind a `Mutex` and every other field is `let`; Swift checks no open
// class.
// Tested: `TaskConcurrencyTests.aRequestIsChangedAndReadByThreadsAtOnce`.
public class TaskRequest: @unchecked Sendable, CustomStringConvertible {
    /// The identifier the launch handler was registered for; one of the permitted identifiers.
    public let identifier: String
    private let begin = Mutex<Date?>(nil)
    /// The task never begins before this date; it is a hint, not a promise that it begins then.
    public var earliestBeginDate: Date? {
        get { begin.withLock { $0 } }
        set { begin.withLock { $0 = newValue } }
    }

    init(identifier: String) {
        self.identifier = identifier
    }

    /// The kind, as stored: `refresh` or `processing`.
    var kind: TaskKind { .refresh }

    func copy() -> TaskRequest { self }

    public var description: String {
        "\(type(of: self))(identifier: \(identifier), earliestBeginDate: \(earliestBeginDate.map { "\($0)" } ?? "none"))"
    }
}

/// A request for a short refresh of the app's content (Apple's `BGAppRefreshTaskRequest`): about
/// 30 seconds of run time; at most one is pending at a time.
// Safe because: it adds no state to `TaskRequest`.
// Tested: `TaskConcurrencyTests.aRequestIsChangedAndReadByThreadsAtOnce`.
public final class AppRefreshTaskRequest: TaskRequest, @unchecked Sendable {
    public override init(identifier: String) {
        super.init(identifier: identifier)
    }

    override var kind: TaskKind { .refresh }

    override func copy() -> TaskRequest {
        let c = AppRefreshTaskRequest(identifier: identifier)
        c.earliestBeginDate = earliestBeginDate
        return c
    }
}

/// A request for deferrable maintenance or processing (Apple's `BGProcessingTaskRequest`): minutes
/// of run time, under conditions; at most ten are pending at a time.
// Safe because: its one addition is behind a `Mutex`.
// Tested: `TaskConcurrencyTests.aRequestIsChangedAndReadByThreadsAtOnce`.
public final class ProcessingTaskRequest: TaskRequest, @unchecked Sendable {
    private let requirements = Mutex<(network: Bool, power: Bool)>((false, false))
    /// The task waits for a network connection (default false: it may run without one).
    public var requiresNetworkConnectivity: Bool {
        get { requirements.withLock { $0.network } }
        set { requirements.withLock { $0.network = newValue } }
    }
    /// The task waits until the machine is on external power (default false).
    public var requiresExternalPower: Bool {
        get { requirements.withLock { $0.power } }
        set { requirements.withLock { $0.power = newValue } }
    }

    public override init(identifier: String) {
        super.init(identifier: identifier)
    }

    override var kind: TaskKind { .processing }

    override func copy() -> TaskRequest {
        let c = ProcessingTaskRequest(identifier: identifier)
        c.earliestBeginDate = earliestBeginDate
        c.requiresNetworkConnectivity = requiresNetworkConnectivity
        c.requiresExternalPower = requiresExternalPower
        return c
    }
}

/// The two kinds of task, each with its own limit of pending requests and its own time budget.
public enum TaskKind: String, Sendable, Hashable, CaseIterable {
    case refresh
    case processing

    /// How many requests of this kind may be pending at once (Apple: 1 refresh, 10 processing).
    public var pendingLimit: Int { self == .refresh ? 1 : 10 }
}
