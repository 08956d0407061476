import BacklotBasics
import BacklotZstd
import Dispatch
import Synchronization

/// How ``PackWriter`` decides whether a pack gets a zstd dictionary, and trains it
/// (`docs/format.md` §5): a pack of many small files compresses each one as its own frame, so
/// without a dictionary every frame starts from nothing, and text files of a few KB compress
/// far worse than inside a tar.zst.
///
/// The dictionary is trained on an even spread of the small files (every n-th, in pack order,
/// up to ``sampleBudget`` bytes), with fixed parameters on one thread, so the same files give the
/// same dictionary whatever the thread count. It is kept only when it pays: compressing the
/// samples with it must save, scaled to all the small files, more than twice its own size.
enum PackDictionary {
    /// Files up to this size are the ones a dictionary helps (one chunk each: the chunker's
    /// smallest chunk is 16 KiB by default).
    static let fileLimit: UInt64 = 16 << 10
    /// Fewer small files than this get no dictionary (it would not pay for itself).
    static let minimumFiles = 1_000
    /// The dictionary's largest size. zstd advises about 100 KB; on the small-files benchmark
    /// (50,000 files) 64 KiB gave smaller packs than 112, 86 or 32 KiB.
    static let maximumCapacity = 64 << 10
    /// The dictionary's size for `sampleBytes` of samples: a 128th of them (zstd advises a
    /// hundredth), between 8 and ``maximumCapacity`` KiB, so that a pack of a thousand small
    /// files does not carry a dictionary larger than what it saves.
    static func capacity(forSamples sampleBytes: UInt64) -> Int {
        Int(min(UInt64(maximumCapacity), max(8 << 10, sampleBytes / 128)))
    }
    /// The samples' total size (zstd's advice: about a hundred times the dictionary).
    static let sampleBudget: UInt64 = 8 << 20

    /// The dictionary for `files`, or nil when there are too few small files or it would not pay.
    /// While it is trained on one thread, the others measure the samples without it, then read
    /// `ahead` the first files.
    /// - Throws: ``BacklotError/Code/invalidSource`` if a sampled file changed since it was
    ///   selected, ``BacklotError/Code/io``.
    static func train(
        for files: [SourceSelection.File], root: DirectoryHandle, level: Int32, jobs: Int,
        readingAhead ahead: ReadAhead? = nil
    ) throws -> ZstdDictionary? {
        var candidates = 0
        var candidateBytes: UInt64 = 0
        for f in files where f.size >= 1 && f.size <= fileLimit {
            candidates += 1
            candidateBytes += f.size
        }
        guard candidates >= minimumFiles else { return nil }
        let every = max(1, Int((candidateBytes + sampleBudget - 1) / sampleBudget))
        var chosen: [SourceSelection.File] = []
        var seen = 0
        for f in files where f.size >= 1 && f.size <= fileLimit {
            defer { seen += 1 }
            if seen % every == 0 { chosen.append(f) }
        }
        let (joined, sizes) = try read(chosen, root: root, jobs: jobs)
        let sampled = UInt64(joined.count)
        var starts: [Int] = []
        starts.reserveCapacity(sizes.count)
        var at = 0
        for size in sizes {
            starts.append(at)
            at += size
        }
        let samples = joined
        let bounds = starts
        let lengths = sizes
        let capacity = capacity(forSamples: sampled)
        // Training runs on one thread; what the samples take without a dictionary does not depend
        // on it, so the other workers measure that meanwhile, and the trainer joins them once done.
        let trained = IndexedResults<ZstdDictionary?>(count: 1)
        let alone = AtomicCounter()
        let nextAlone = AtomicCounter()
        let untrained = Atomic<Bool>(false)
        let failures = FirstFailure()
        let training = Atomic<Bool>(true)
        let task: @Sendable (Int) -> Void = { task in
            if task == 0 {
                let dictionary = ZstdDictionary.train(joined: samples, sizes: lengths, capacity: capacity)
                trained.set(0, dictionary)
                if dictionary == nil { untrained.store(true, ordering: .relaxed) }
                training.store(false, ordering: .relaxed)
            }
            compress(
                samples, bounds: bounds, lengths: lengths, with: ZstdCompressor(level: level), next: nextAlone,
                total: alone, failures: failures, while: { !untrained.load(ordering: .relaxed) })
            if task != 0 { ahead?.run(root: root, until: { !training.load(ordering: .relaxed) }) }
        }
        if jobs > 1 { DispatchQueueRunner.forEach(count: jobs, task) } else { task(0) }
        if let error = failures.first { throw error }
        guard let dictionary = trained.get(0) else { return nil }

        // What they take with it, on the worker threads.
        let against = AtomicCounter()
        let next = AtomicCounter()
        DispatchQueueRunner.run(jobs: jobs) {
            compress(
                samples, bounds: bounds, lengths: lengths, with: ZstdCompressor(level: level, dictionary: dictionary),
                next: next, total: against, failures: failures)
        }
        if let error = failures.first { throw error }
        // The total saved is a sum of integers, the same whatever order the threads add them in.
        let saved = alone.valueAdd(0) - against.valueAdd(0)
        let expected = Double(saved) * Double(candidateBytes) / Double(max(1, sampled))
        return expected > Double(2 * dictionary.bytes.count) ? dictionary : nil
    }

    /// The `chosen` files' bytes end to end, and each one's size, read on `jobs` threads.
    private static func read(
        _ chosen: [SourceSelection.File], root: DirectoryHandle, jobs: Int
    ) throws -> (joined: [UInt8], sizes: [Int]) {
        let read = IndexedResults<[UInt8]>(count: chosen.count)
        let next = AtomicCounter()
        let failures = FirstFailure()
        DispatchQueueRunner.run(jobs: jobs) {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(fileLimit) + 1, alignment: 16)
            defer { buffer.deallocate() }
            while !failures.hasFailure {
                let i = next.increment()
                guard i < chosen.count else { return }
                do {
                    let count = try SmallBatch.read(chosen[i], root: root, into: buffer)
                    read.set(i, Array(UnsafeRawBufferPointer(rebasing: buffer[0..<count])))
                } catch {
                    failures.record(i, error)
                }
            }
        }
        if let error = failures.first { throw error }
        var joined: [UInt8] = []
        joined.reserveCapacity(Int(chosen.reduce(UInt64(0)) { $0 + $1.size }))
        var sizes: [Int] = []
        sizes.reserveCapacity(chosen.count)
        for i in chosen.indices {
            let sample = read.take(i)
            joined += sample
            sizes.append(sample.count)
        }
        return (joined, sizes)
    }

    /// Compresses the samples `next` hands out (each `lengths[i]` bytes at `bounds[i]`) until none
    /// is left, a failure was recorded or `going` says to stop, adding their compressed sizes to
    /// `total` (a sum, the same whatever thread takes which sample).
    private static func compress(
        _ samples: [UInt8], bounds: [Int], lengths: [Int], with compressor: ZstdCompressor, next: AtomicCounter,
        total: AtomicCounter, failures: FirstFailure, while going: () -> Bool = { true }
    ) {
        while !failures.hasFailure && going() {
            let i = next.increment()
            guard i < lengths.count else { return }
            do {
                try samples.withUnsafeBytes { all in
                    let sample = UnsafeRawBufferPointer(rebasing: all[bounds[i]..<bounds[i] + lengths[i]])
                    _ = total.valueAdd(try compressor.compress(sample).count)
                }
            } catch {
                failures.record(i, error)
            }
        }
    }
}
