import BacklotBasics
import Foundation
import Synchronization
import Testing

/// Capping malloc's arenas holds however many threads allocate at once. Each case runs in a
/// process of its own (an exit test): the cap is process-wide and must come before the threads.
@Suite struct MemoryArenasTests {
    /// Eight threads allocating at the same moment, each holding its blocks until all have
    /// allocated; returns how many arenas malloc then has. (The test process's own threads may
    /// have made arenas before: the cases compare with the count before.)
    static func arenasAfterEightThreadsAllocateAtOnce() -> Int? {
        let started = DispatchGroup()
        let release = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for _ in 0..<8 {
            started.enter()
            done.enter()
            Thread.detachNewThread {
                var blocks: [UnsafeMutableRawPointer] = []
                for _ in 0..<64 { blocks.append(UnsafeMutableRawPointer.allocate(byteCount: 4096, alignment: 16)) }
                started.leave()
                release.wait()
                for b in blocks { b.deallocate() }
                done.leave()
            }
        }
        started.wait()
        let count = MemoryArenas.count
        for _ in 0..<8 { release.signal() }
        done.wait()
        return count
    }

    /// Capped, the eight threads make no arena beyond the cap (or beyond those already made).
    @Test func theCapHoldsWhileEightThreadsAllocate() async {
        await #expect(processExitsWith: .success) {
            guard let before = MemoryArenas.count else { exit(3) }
            guard MemoryArenas.limit(to: 2) else { exit(4) }
            guard let after = MemoryArenasTests.arenasAfterEightThreadsAllocateAtOnce() else { exit(5) }
            exit(after <= max(before, 2) ? 0 : 6)
        }
    }

    /// Without the cap the same threads get arenas of their own: the check above can tell.
    @Test func withoutTheCapThreadsGetMoreArenas() async {
        await #expect(processExitsWith: .success) {
            guard let before = MemoryArenas.count else { exit(3) }
            guard let after = MemoryArenasTests.arenasAfterEightThreadsAllocateAtOnce() else { exit(5) }
            exit(after > max(before, 2) ? 0 : 6)
        }
    }

    /// Frees an 8 MiB block, then allocates 2 MiB: whether the new block is a mapping of its own.
    static func twoMiBIsMappedAfterAnEightMiBBlockWasFreed() -> Bool {
        let large = UnsafeMutableRawPointer.allocate(byteCount: 8 << 20, alignment: 16)
        large.deallocate()
        let before = MemoryArenas.mappedBlocks
        let block = UnsafeMutableRawPointer.allocate(byteCount: 2 << 20, alignment: 16)
        defer { block.deallocate() }
        return MemoryArenas.mappedBlocks == before + 1
    }

    /// With the threshold fixed at 1 MiB, a 2 MiB block is a mapping of its own (given back when
    /// freed) even after a larger block was freed.
    @Test func largeBlocksStayMappingsWithTheThresholdFixed() async {
        await #expect(processExitsWith: .success) {
            guard MemoryArenas.mapBlocks(ofAtLeast: 1 << 20) else { exit(4) }
            exit(MemoryArenasTests.twoMiBIsMappedAfterAnEightMiBBlockWasFreed() ? 0 : 6)
        }
    }

    /// Without it, glibc raised its threshold to the freed block's size, and the 2 MiB block comes
    /// from the heap (where it would stay resident once freed): the check above can tell.
    @Test func withoutTheFixedThresholdLargeBlocksComeFromTheHeap() async {
        await #expect(processExitsWith: .success) {
            exit(MemoryArenasTests.twoMiBIsMappedAfterAnEightMiBBlockWasFreed() ? 6 : 0)
        }
    }
}
