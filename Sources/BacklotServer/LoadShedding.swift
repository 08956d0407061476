import BacklotBasics
import BacklotHTTPServer
import BacklotProtocol
import Dispatch
import Foundation
import Synchronization

/// How `backlot serve` keeps a release storm from feeding itself (docs/scaling.md, "A release
/// storm"): a bound on the heavy requests it works on at once — archive and delta transfers and
/// management-API calls — above which it answers 503 with `Retry-After` at once rather than queue
/// work it cannot finish in time; and the `Backlot-Check-After` hint on catalogs, raised while it
/// sheds, so devices check less often until the storm passes. Catalogs and key lists are never shed:
/// they are small, and a device that cannot read one cannot learn to wait.
///
/// ```swift
/// var shedding = LoadShedding(heavyRequests: 512)
/// shedding.checkAfter = 3600        // devices check at most hourly
/// ```
public struct LoadShedding: Sendable, Hashable {
    /// Heavy requests answered at once, at most; 0 for no bound.
    public var heavyRequests: Int
    /// The `Retry-After` of a shed request, in seconds (devices add their own jitter).
    public var retryAfter: Int
    /// The `Backlot-Check-After` sent with catalogs normally; nil for none.
    public var checkAfter: Int?
    /// The `Backlot-Check-After` sent with catalogs while the server sheds load (and for
    /// ``calmSeconds`` after the last request shed).
    public var checkAfterUnderLoad: Int
    /// Seconds without a shed request after which the server counts as calm again.
    public var calmSeconds: Int

    /// The default: 512 heavy requests, `Retry-After: 2`, no hint normally, 900 s under load.
    public init(
        heavyRequests: Int = 512, retryAfter: Int = 2, checkAfter: Int? = nil, checkAfterUnderLoad: Int = 900,
        calmSeconds: Int = 60
    ) {
        self.heavyRequests = max(0, heavyRequests)
        self.retryAfter = max(1, retryAfter)
        self.checkAfter = checkAfter.map { min(max(0, $0), PublishedTreeLayout.longestCheckAfter) }
        self.checkAfterUnderLoad = min(max(0, checkAfterUnderLoad), PublishedTreeLayout.longestCheckAfter)
        self.calmSeconds = max(1, calmSeconds)
    }
}

/// The counting side of ``LoadShedding``: heavy requests in flight (taken when a request is
/// admitted, given back when its answer ends: the admitted requests' numbers are kept, so that
/// only they give anything back, whatever else ends on the same paths), requests shed, and when
/// the last one was.
final class LoadShedder: Sendable {
    let settings: LoadShedding
    private let heavy = Atomic<Int>(0)
    /// The numbers (``HTTPRequest/number``) of the requests admitted and not yet ended.
    private let admitted = Mutex<Set<UInt64>>([])
    private let shed = Atomic<UInt64>(0)
    /// Nanoseconds on the monotonic clock of the last request shed (0: never).
    private let lastShed = Atomic<UInt64>(0)
    /// The route label of a shed request's 503, so that its end gives nothing back.
    static let route = "shed"

    init(_ settings: LoadShedding) { self.settings = settings }

    /// Heavy requests being answered now.
    var inFlight: Int { heavy.load(ordering: .relaxed) }
    /// Requests shed since the start.
    var shedCount: UInt64 { shed.load(ordering: .relaxed) }

    /// Whether `request` is heavy: an archive's or a delta's bytes, or a management-API call.
    static func isHeavy(_ request: HTTPRequest) -> Bool {
        if request.path.hasPrefix(API.pathPrefix) { return true }
        switch PublishedTreeLayout(path: request.path.drop(while: { $0 == "/" })) {
        case .pack?, .delta?: return true
        default: return false
        }
    }

    /// Admits `request` (nil: go on, its slot is taken) or answers it with a 503 now.
    func admit(_ request: HTTPRequest) -> HTTPResponse? {
        guard settings.heavyRequests > 0, request.number != 0, Self.isHeavy(request) else { return nil }
        if heavy.wrappingAdd(1, ordering: .relaxed).newValue <= settings.heavyRequests {
            admitted.withLock { _ = $0.insert(request.number) }
            return nil
        }
        heavy.wrappingAdd(-1, ordering: .relaxed)
        shed.wrappingAdd(1, ordering: .relaxed)
        lastShed.store(Self.now(), ordering: .relaxed)
        var r = HTTPResponse.error(
            503, code: .busy, "the server is answering as many transfers as it can; try again shortly",
            hint: "wait for Retry-After seconds", route: Self.route)
        r.headers.append(("Retry-After", String(settings.retryAfter)))
        return r
    }

    /// Gives back `request`'s slot when its answer has ended (the observer's call, for every
    /// request): only a request ``admit(_:)`` took a slot for gives one back, once.
    func finished(_ request: HTTPRequest) {
        guard request.number != 0, admitted.withLock({ $0.remove(request.number) }) != nil else { return }
        heavy.wrappingAdd(-1, ordering: .relaxed)
    }

    /// The `Backlot-Check-After` to send with a catalog now, if any.
    func checkAfter() -> Int? {
        let last = lastShed.load(ordering: .relaxed)
        if last != 0, Self.now() - last < UInt64(min(settings.calmSeconds, 86_400)) * 1_000_000_000 {
            return max(settings.checkAfterUnderLoad, settings.checkAfter ?? 0)
        }
        return settings.checkAfter
    }

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}
