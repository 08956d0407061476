import BacklotBasics
import CBacklot
import Foundation

/// Memory handed across the C boundary: every buffer the library gives a caller is `malloc`'d,
/// so that `backlot_free` is `free`; and C strings in are read as UTF-8 or refused.
enum CMemory {
    /// A `malloc`'d, NUL-terminated copy of `text`. Stops the process only if memory is exhausted
    /// (as `malloc` failing leaves nothing else to do).
    static func duplicate(_ text: String) -> UnsafeMutablePointer<CChar> {
        let bytes = Array(text.utf8)
        let pointer = allocate(bytes.count + 1).assumingMemoryBound(to: CChar.self)
        bytes.withUnsafeBytes { source in
            if let base = source.baseAddress { memcpy(pointer, base, bytes.count) }
        }
        pointer[bytes.count] = 0
        return pointer
    }

    /// `count` bytes from `malloc` (at least 1).
    static func allocate(_ count: Int) -> UnsafeMutableRawPointer {
        guard let pointer = malloc(max(1, count)) else { fatalError("libbacklot: out of memory (\(count) bytes)") }
        return pointer
    }

    /// `count` bytes from `malloc` (at least 1) for data whose size comes from outside (a file):
    /// what `malloc` cannot give is an error for the caller, not the end of its process.
    /// - Throws: ``BacklotError/Code/io`` naming `what` and the size, with `hint`.
    static func allocate(_ count: Int, for what: String, hint: String) throws -> UnsafeMutableRawPointer {
        guard let pointer = malloc(max(1, count)) else {
            throw BacklotError(.io, "not enough memory to read \(what) (\(count) bytes)", context: what, hint: hint)
        }
        return pointer
    }

    /// Strings as one `malloc`'d block: `count` pointers, a NULL, then the strings they point at;
    /// one `free` releases it all. nil for no strings.
    static func stringList(_ strings: [String]) -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? {
        guard !strings.isEmpty else { return nil }
        let pointerBytes = (strings.count + 1) * MemoryLayout<UnsafeMutablePointer<CChar>?>.stride
        let texts = strings.map { Array($0.utf8) + [0] }
        let total = pointerBytes + texts.reduce(0) { $0 + $1.count }
        let block = allocate(total)
        let pointers = block.bindMemory(to: UnsafeMutablePointer<CChar>?.self, capacity: strings.count + 1)
        var offset = pointerBytes
        for (i, text) in texts.enumerated() {
            let destination = (block + offset).bindMemory(to: CChar.self, capacity: text.count)
            text.withUnsafeBytes { source in
                if let base = source.baseAddress { memcpy(destination, base, text.count) }
            }
            pointers[i] = destination
            offset += text.count
        }
        pointers[strings.count] = nil
        return pointers
    }

    /// Hands `strings` to a caller's `char ***` and `size_t *`, sorted by their UTF-8 bytes, as
    /// one block (``stringList(_:)``; NULL and 0 for none).
    static func writeList(
        _ strings: some Collection<String>,
        to list: CStringListOut,
        count: UnsafeMutablePointer<Int>
    ) {
        let sorted = strings.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        list.pointee = stringList(sorted)
        count.pointee = sorted.count
    }

    /// A C string argument as a Swift string.
    /// - Throws: ``CallError`` (invalid argument) for NULL or bytes that are not UTF-8, naming `what`.
    static func string(_ pointer: UnsafePointer<CChar>?, _ what: String) throws -> String {
        guard let pointer else { throw CallError.invalidArgument("\(what) is NULL") }
        guard let text = String(validatingCString: pointer) else {
            throw CallError.invalidArgument("\(what) is not UTF-8")
        }
        return text
    }

    /// An optional C string argument: nil for NULL.
    static func optionalString(_ pointer: UnsafePointer<CChar>?, _ what: String) throws -> String? {
        guard pointer != nil else { return nil }
        return try string(pointer, what)
    }

    /// Initialises a caller's struct of `size` bytes (its size in the caller's header): the first
    /// bytes from `defaults`, as many as both know; bytes past ours (members of a newer header)
    /// zero; the `size` member set to `size`. Nothing happens for NULL or a size that cannot even
    /// hold the `size` member.
    /// - Parameter end: where our last member ends: the struct's tail padding after it is written
    ///   as zeros, never copied from `defaults` (a Swift value's padding bytes are whatever its
    ///   storage held, and a caller with a larger, newer struct has members there).
    static func initialise<T>(
        _ pointer: UnsafeMutablePointer<T>?, size: Int, with defaults: T, end: Int = MemoryLayout<T>.size
    ) {
        guard let pointer, size >= MemoryLayout<Int>.size else { return }
        let raw = UnsafeMutableRawPointer(pointer)
        let end = min(end, MemoryLayout<T>.size)
        var value = defaults
        withUnsafeBytes(of: &value) { source in
            if let base = source.baseAddress { memcpy(raw, base, min(size, end)) }
        }
        if size > end { memset(raw + end, 0, size - end) }
        raw.storeBytes(of: size, as: Int.self)
    }

    /// A struct of the header that starts with its `size`, as much of it as the caller gave:
    /// members past the caller's size keep `defaults`' values (a caller built against an older,
    /// smaller struct), members past ours are ignored (a newer one).
    /// - Parameter releaseSizes: the struct's size in each release of the header (its `sizeof`
    ///   there): a size between two of them would end inside a member (half a pointer read as a
    ///   whole), so only these, or one larger than ours (a newer header), are taken.
    /// - Throws: ``CallError`` for NULL or a size that is none of a release's.
    static func sized<T>(_ pointer: UnsafePointer<T>?, _ what: String, defaults: T, releaseSizes: [Int]) throws -> T {
        guard let pointer else { throw CallError.invalidArgument("\(what) is NULL") }
        let given = UnsafeRawPointer(pointer).load(as: Int.self)
        guard releaseSizes.contains(given) || given >= MemoryLayout<T>.size else {
            throw CallError.invalidArgument(
                "\(what)'s size is \(given), not its size in any release of backlot.h (\(releaseSizes.map(String.init).joined(separator: ", "))): initialise it with its _init function first"
            )
        }
        var value = defaults
        withUnsafeMutableBytes(of: &value) { destination in
            if let base = destination.baseAddress {
                memcpy(base, UnsafeRawPointer(pointer), min(given, MemoryLayout<T>.size))
            }
        }
        return value
    }
}
