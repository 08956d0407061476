import Synchronization

/// Hands the runs of one download (Range requests, in file order) to its connections so that the
/// requests in flight at once ask for distant parts of the file, and each connection walks its own
/// part from front to back.
///
/// Why: a caching edge that fills its cache in slices (nginx's `slice`, CDNs that fetch fixed-size
/// ranges) lets one request fetch a slice from the origin and holds every other request for that
/// slice until it is stored; nginx looks again only every 500 ms. Runs handed out in file order to
/// four connections put four requests on neighbouring bytes, so two of them nearly always share a
/// slice and one waits: a cold edge installed at a third of the origin's speed. Handed out as
/// lanes, two requests share a slice only where one lane meets the next, and by then the slice has
/// long been stored.
///
/// A connection whose lane is empty takes the back half of the fullest lane (the part its owner
/// reaches last) and walks it from front to back in turn, so no connection idles while another has
/// work queued.
///
/// ```swift
/// let lanes = RangeLanes(count: runs.count, lanes: 4)
/// while let i = lanes.next(for: connection) { fetch(runs[i]) }
/// ```
final class RangeLanes: Sendable {
    private let lanes: Mutex<[Range<Int>]>

    /// Splits `0..<count` into `lanes` contiguous lanes of nearly equal length (at least one).
    init(count: Int, lanes: Int) {
        let k = max(1, lanes)
        let n = max(0, count)
        self.lanes = Mutex(
            (0..<k).map { i in
                (n * i / k)..<(n * (i + 1) / k)
            })
    }

    /// The next index for the connection that owns lane `lane`, or nil when every lane is empty.
    func next(for lane: Int) -> Int? {
        lanes.withLock { lanes in
            guard lanes.indices.contains(lane) else { return nil }
            if lanes[lane].isEmpty {
                guard let fullest = lanes.indices.max(by: { lanes[$0].count < lanes[$1].count }),
                    !lanes[fullest].isEmpty
                else { return nil }
                let victim = lanes[fullest]
                let middle = victim.lowerBound + victim.count / 2
                lanes[fullest] = victim.lowerBound..<middle
                lanes[lane] = middle..<victim.upperBound
            }
            let i = lanes[lane].lowerBound
            lanes[lane] = (i + 1)..<lanes[lane].upperBound
            return i
        }
    }

    /// How many indices no connection has taken yet.
    var remaining: Int { lanes.withLock { $0.reduce(0) { $0 + $1.count } } }
}
