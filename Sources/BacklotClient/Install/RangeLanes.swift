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
/// Two requests still share a slice where they are neighbours, so lanes keep their distance: each
/// lane holds two runs at least (fewer runs make fewer lanes), and a connection whose lane is empty
/// takes the back half of the fullest lane only while that lane has four runs or more left, so
/// that two runs at least lie between where its owner is and where the taker starts; the taker
/// then walks its half from front to back. Below that, the owners finish their own lanes.
///
/// ```swift
/// let lanes = RangeLanes(count: runs.count, connections: 4)
/// onThreads(lanes.count) { lane in
///     while let i = lanes.next(for: lane) { fetch(runs[i]) }
/// }
/// ```
final class RangeLanes: Sendable {
    private let lanes: Mutex<[Range<Int>]>
    /// How many lanes there are: the connections to run, one per lane.
    let count: Int

    /// The fewest runs a lane must have left for an idle connection to take half of them.
    static let smallestShared = 4

    /// Splits `0..<count` into contiguous lanes of nearly equal length, one per connection, but
    /// no more than leave each lane two runs (one lane at least).
    init(count: Int, connections: Int) {
        let n = max(0, count)
        let k = max(1, min(connections, n / 2))
        self.count = k
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
                    lanes[fullest].count >= Self.smallestShared
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
