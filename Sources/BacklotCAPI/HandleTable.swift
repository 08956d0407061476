import Synchronization

/// The objects C callers hold handles to. A handle is not a pointer but a slot number and the
/// slot's generation, packed into a pointer-sized value: a closed handle (whose slot's generation
/// moved on, even when the slot was reused) and a forged one are refused, never followed.
///
/// ```swift
/// let table = HandleTable<Box>()
/// let handle = table.insert(box)            // hand this to C
/// let same = try table.lookup(handle)       // in each call
/// let closed = table.remove(handle)         // backlot_*_close
/// ```
final class HandleTable<Object: AnyObject & Sendable>: Sendable {
    private struct Slot {
        var generation: UInt32
        var object: Object?
    }
    private let slots = Mutex<(slots: [Slot], free: [Int])>(([], []))

    /// The handle of a new entry.
    func insert(_ object: Object) -> UInt {
        slots.withLock { table in
            let index: Int
            if let reused = table.free.popLast() {
                index = reused
                table.slots[index].object = object
            } else {
                index = table.slots.count
                table.slots.append(Slot(generation: 1, object: object))
            }
            return Self.handle(index: index, generation: table.slots[index].generation)
        }
    }

    /// The object of an open handle.
    /// - Throws: ``CallError`` (invalid argument) for 0 or a value no handle ever had; closed
    ///   handle for one whose entry was removed.
    func lookup(_ handle: UInt) throws -> Object {
        guard handle != 0 else { throw CallError.invalidArgument("the handle is NULL") }
        let (index, generation) = Self.split(handle)
        return try slots.withLock { table in
            guard index < table.slots.count, generation != 0, generation <= table.slots[index].generation else {
                throw CallError.invalidArgument("the handle is not one libbacklot made")
            }
            guard table.slots[index].generation == generation, let object = table.slots[index].object else {
                throw CallError.closedHandle
            }
            return object
        }
    }

    /// Removes an entry: its handle is closed from now on. Returns the object, nil for a handle
    /// that was not open.
    @discardableResult
    func remove(_ handle: UInt) -> Object? {
        guard handle != 0 else { return nil }
        let (index, generation) = Self.split(handle)
        return slots.withLock { table in
            guard index < table.slots.count, table.slots[index].generation == generation,
                let object = table.slots[index].object
            else { return nil }
            table.slots[index].object = nil
            // A generation that would wrap retires the slot for good rather than reuse a number.
            if table.slots[index].generation < UInt32.max {
                table.slots[index].generation += 1
                table.free.append(index)
            }
            return object
        }
    }

    /// Every open object (for shutting them down).
    var all: [Object] { slots.withLock { $0.slots.compactMap(\.object) } }

    // A handle: the slot number + 1 in the low 32 bits, the generation in the high 32 bits, so
    // that no handle is 0 and none looks like a small integer.
    static func handle(index: Int, generation: UInt32) -> UInt {
        (UInt(generation) << 32) | UInt(UInt32(truncatingIfNeeded: index + 1))
    }

    static func split(_ handle: UInt) -> (index: Int, generation: UInt32) {
        let low = UInt32(truncatingIfNeeded: handle)
        let index = low == 0 ? Int.max : Int(low) - 1
        return (index, UInt32(truncatingIfNeeded: handle >> 32))
    }
}
