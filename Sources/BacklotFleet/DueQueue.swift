/// The devices waiting for their next check, earliest first (a binary heap): what a fleet's
/// threads take their next device from. Not synchronised: its owner holds it under a lock.
struct DueQueue {
    private var heap: [(due: Double, device: Int)] = []

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }

    /// When the earliest device is due (seconds since the run began), if any.
    var earliest: Double? { heap.first?.due }

    mutating func push(_ device: Int, due: Double) {
        heap.append((due, device))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].due < heap[parent].due else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest device.
    mutating func pop() -> (due: Double, device: Int)? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].due < heap[smallest].due { smallest = left }
            if right < heap.count, heap[right].due < heap[smallest].due { smallest = right }
            guard smallest != parent else { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return top
    }
}
