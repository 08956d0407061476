import BacklotBasics
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The body of a large file answer, copied to the socket in blocks of at most ``blockSize`` by
/// plain `send` calls (a libmicrohttpd callback response) rather than by `sendfile`.
///
/// Why: libmicrohttpd sends a file with `sendfile` in 128 KiB pieces and corks the socket
/// (`TCP_CORK`) for every piece but the last; measured on loopback (docs/benchmarks.md, "The
/// hosting server against nginx"), a corked socket sends a 1 GiB file at 1.5–2.2 GB/s where the
/// same `sendfile` calls uncorked reach 3–3.9, and a copy through this buffer 2–3.2. Its
/// callback responses are sent uncorked. The copy costs a buffer per answer, so at most
/// ``Budget/maximum`` answers (``shared``: all servers of the process together) take this path;
/// past that an answer goes from the descriptor (by `sendfile` on plain HTTP, which needs no
/// memory of its own; over TLS libmicrohttpd reads it 4 KiB at a time).
///
/// The copy is CPU spent (0.06 CPU-seconds per GiB more than `sendfile` here); over a network
/// interface's 1.5 KB segments the cork costs little, over loopback's 64 KiB ones it is what the
/// copy wins back, and over TLS (where libmicrohttpd reads a file answer 4 KiB at a time) the
/// 256 KiB blocks are 2–3 times faster wherever the server runs.
///
/// It owns the descriptor and closes it when libmicrohttpd lets the response go.
final class FileBody: Sendable {
    /// The most bytes read and sent per call (a smaller answer gets a buffer of its own size).
    static let blockSize = 256 << 10

    /// How many answers may be copied at once.
    final class Budget: Sendable {
        let maximum: Int
        private let taken = Atomic<Int>(0)

        init(maximum: Int) { self.maximum = maximum }

        /// Answers being copied now.
        var inUse: Int { taken.load(ordering: .acquiring) }

        /// Places given since the start (a test's evidence that answers took this path).
        var granted: Int { grants.load(ordering: .acquiring) }
        private let grants = Atomic<Int>(0)

        /// Takes one place; false when all are taken.
        func take() -> Bool {
            guard taken.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue <= maximum else {
                giveBack()
                return false
            }
            grants.wrappingAdd(1, ordering: .relaxed)
            return true
        }

        func giveBack() { taken.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
    }

    /// The budget of every server in the process: 64 answers, whose buffers take at most 16 MiB.
    static let shared = Budget(maximum: 64)

    let file: FileDescriptor
    let start: UInt64
    let length: UInt64
    let budget: Budget

    /// Takes `fd` for the `length` bytes from `offset`, or returns nil (and leaves `fd` to the
    /// caller) when the budget's answers are all being copied or the range does not fit in a file
    /// offset.
    init?(fd: Int32, offset: UInt64, length: UInt64, budget: Budget = FileBody.shared) {
        let (end, overflow) = offset.addingReportingOverflow(length)
        guard !overflow, off_t(exactly: end) != nil, budget.take() else { return nil }
        file = FileDescriptor(rawValue: fd, path: "a file answer")
        start = offset
        self.length = length
        self.budget = budget
    }

    deinit {
        file.close()
        budget.giveBack()
    }

    /// The buffer libmicrohttpd keeps for this answer.
    var bufferSize: Int { Int(min(UInt64(Self.blockSize), max(length, 1))) }

    /// Reads up to `maximum` bytes at `position` of the body. Returns what it read, or -2
    /// (libmicrohttpd's "end with an error", which closes the connection) when the file ends
    /// before the length announced (it was changed meanwhile) or cannot be read.
    func read(at position: UInt64, into buffer: UnsafeMutablePointer<CChar>, _ maximum: Int) -> Int {
        guard position < length, maximum > 0 else { return -2 }
        let count = Int(min(UInt64(maximum), length - position))
        // Within the range `init` checked fits a file offset.
        guard
            let n = try? file.read(
                into: UnsafeMutableRawBufferPointer(start: buffer, count: count), at: start + position),
            n > 0
        else { return -2 }
        return n
    }
}
