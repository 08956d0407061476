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

    /// The resident size of this process, in bytes (/proc/self/statm).
    static func residentBytes() -> Int {
        let fields = ((try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? "").split(separator: " ")
        return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
    }

    /// Frees 16 MiB of small blocks but the last one (which keeps the heap from shrinking at its
    /// top), then asks for the freed memory back: how much the resident size fell, and the answer.
    static func residentFallAfterGivingBack() -> (fall: Int, gaveBack: Bool) {
        var blocks: [UnsafeMutableRawPointer] = []
        for _ in 0..<(16 << 20) / 1024 {
            let block = UnsafeMutableRawPointer.allocate(byteCount: 1024, alignment: 16)
            block.initializeMemory(as: UInt8.self, repeating: 1, count: 1024)
            blocks.append(block)
        }
        let last = blocks.removeLast()
        for b in blocks { b.deallocate() }
        blocks = []
        let before = residentBytes()
        let gaveBack = MemoryArenas.giveBackFreedMemory()
        let fall = before - residentBytes()
        last.deallocate()
        return (fall, gaveBack)
    }

    /// In a device's process, what was freed goes back to the kernel when asked (an install does
    /// between its download and its commit): more than 8 of the 16 MiB freed.
    @Test func aDevicesProcessGivesFreedMemoryBack() async {
        await #expect(processExitsWith: .success) {
            MemoryArenas.keepSmallForDevice()
            let (fall, gaveBack) = MemoryArenasTests.residentFallAfterGivingBack()
            exit(gaveBack && fall > 8 << 20 ? 0 : 6)
        }
    }

    /// Any other process keeps its memory as its allocator decides: nothing is done for it.
    @Test func anotherProcessIsLeftAsItIs() async {
        await #expect(processExitsWith: .success) {
            let (fall, gaveBack) = MemoryArenasTests.residentFallAfterGivingBack()
            exit(!gaveBack && fall < 4 << 20 ? 0 : 6)
        }
    }
}
