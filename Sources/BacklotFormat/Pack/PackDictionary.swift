import BacklotBasics
import BacklotCrypto
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
/// Nothing done for it is done again: the samples are read once, and the frames made to measure
/// the dictionary are their frames in the pack (``Prepared``).
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

    /// What is done before the pack's chunks are: the dictionary, if the pack gets one, and the
    /// files read on the way, so that none is read, hashed or compressed twice.
    struct Prepared: Sendable {
        /// The dictionary every chunk is compressed against; nil when there are too few small
        /// files or it would not pay.
        let dictionary: ZstdDictionary?
        /// The samples of one chunk, by number in the selection, packed: read to train the
        /// dictionary, hashed, and compressed to measure it, with it if it is kept and without it
        /// if not (the frames the pack's compressor makes).
        let samples: [Int: SmallBatch.Packed]
        /// The first files, read, cut and hashed while the dictionary was trained.
        let ahead: ReadAhead?

        static let nothing = Prepared(dictionary: nil, samples: [:], ahead: nil)
    }

    /// Trains the dictionary for `files` and decides whether it pays. While it is trained on one
    /// thread, the others measure the samples without it, then read the first files ahead (with
    /// `readingAhead`; `chunker` cuts them, and the samples).
    /// - Throws: ``BacklotError/Code/invalidSource`` if a sampled file changed since it was
    ///   selected, ``BacklotError/Code/io``.
    static func train(
        for files: [SourceSelection.File], root: DirectoryHandle, level: Int32, jobs: Int, chunker: Chunker,
        readingAhead: Bool
    ) throws -> Prepared {
        var candidates = 0
        var candidateBytes: UInt64 = 0
        for f in files where f.size >= 1 && f.size <= fileLimit {
            candidates += 1
            candidateBytes += f.size
        }
        guard candidates >= minimumFiles else { return .nothing }
        let every = max(1, Int((candidateBytes + sampleBudget - 1) / sampleBudget))
        var chosen: [Int] = []
        var seen = 0
        for (index, f) in files.enumerated() where f.size >= 1 && f.size <= fileLimit {
            defer { seen += 1 }
            if seen % every == 0 { chosen.append(index) }
        }
        let samples = try Samples(reading: chosen.map { files[$0] }, root: root, jobs: jobs)
        let ahead = readingAhead && jobs > 1 ? ReadAhead(selection: files, chunker: chunker, skipping: chosen) : nil
        let sampled = UInt64(samples.joined.count)
        let capacity = capacity(forSamples: sampled)
        // Training runs on one thread; what the samples take without a dictionary does not depend
        // on it, so the other workers measure that meanwhile (and hash the samples), then read
        // ahead, and the trainer joins them once done.
        let trained = IndexedResults<ZstdDictionary?>(count: 1)
        let alone = Frames(count: chosen.count)
        let ids = IndexedResults<SHA256Digest?>(count: chosen.count)
        let nextAlone = AtomicCounter()
        let failures = FirstFailure()
        let training = Atomic<Bool>(true)
        let task: @Sendable (Int) -> Void = { task in
            if task == 0 {
                let dictionary = ZstdDictionary.train(
                    joined: samples.joined, sizes: samples.lengths, capacity: capacity)
                trained.set(0, dictionary)
                training.store(false, ordering: .relaxed)
            }
            samples.compress(with: ZstdCompressor(level: level), into: alone, next: nextAlone, failures: failures) {
                i, sample in
                // A sample of one chunk (all of them, at the default chunk size) is a file packed.
                let (chunks, digest) = SmallBatch.cut(sample, chunker: chunker)
                ids.set(i, chunks.count == 1 ? digest : nil)
            }
            if task != 0 { ahead?.run(root: root, until: { !training.load(ordering: .relaxed) }) }
        }
        if jobs > 1 { DispatchQueueRunner.forEach(count: jobs, task) } else { task(0) }
        if let error = failures.first { throw error }
        // The samples' frames are those their files get in the pack, with the dictionary or without.
        func packed(_ frames: Frames) -> [Int: SmallBatch.Packed] {
            var packed: [Int: SmallBatch.Packed] = [:]
            packed.reserveCapacity(chosen.count)
            for (i, index) in chosen.enumerated() {
                guard let id = ids.get(i) else { continue }
                packed[index] = SmallBatch.Packed(
                    digest: id, pieces: [.init(id: id, length: samples.lengths[i], compressed: frames.frames.take(i))])
            }
            return packed
        }
        guard let dictionary = trained.get(0) else {
            return Prepared(dictionary: nil, samples: packed(alone), ahead: ahead)
        }

        // What they take with it, on the worker threads.
        let against = Frames(count: chosen.count)
        let next = AtomicCounter()
        DispatchQueueRunner.run(jobs: jobs) {
            samples.compress(
                with: ZstdCompressor(level: level, dictionary: dictionary), into: against, next: next,
                failures: failures)
        }
        if let error = failures.first { throw error }
        // The total saved is a sum of integers, the same whatever order the threads add them in.
        let saved = alone.total.valueAdd(0) - against.total.valueAdd(0)
        let expected = Double(saved) * Double(candidateBytes) / Double(max(1, sampled))
        let kept = expected > Double(2 * dictionary.bytes.count)
        return Prepared(dictionary: kept ? dictionary : nil, samples: packed(kept ? against : alone), ahead: ahead)
    }

    /// Compressed samples, by number, and their total size.
    final class Frames: Sendable {
        let frames: IndexedResults<[UInt8]>
        /// The sum of the frames' sizes (the same whatever thread adds which).
        let total = AtomicCounter()
        init(count: Int) { frames = IndexedResults(count: count) }
    }

    /// The samples end to end: sample `i` is `lengths[i]` bytes at `bounds[i]`.
    struct Samples: Sendable {
        let joined: [UInt8]
        let bounds: [Int]
        let lengths: [Int]

        /// The `chosen` files' bytes, read on `jobs` threads.
        /// - Throws: what reading the first of them that fails throws (``SmallBatch/read(_:root:into:)``).
        init(reading chosen: [SourceSelection.File], root: DirectoryHandle, jobs: Int) throws {
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
            var bounds: [Int] = []
            var lengths: [Int] = []
            bounds.reserveCapacity(chosen.count)
            lengths.reserveCapacity(chosen.count)
            for i in chosen.indices {
                let sample = read.take(i)
                bounds.append(joined.count)
                lengths.append(sample.count)
                joined += sample
            }
            (self.joined, self.bounds, self.lengths) = (joined, bounds, lengths)
        }

        /// Compresses the samples `next` hands out into `frames` until none is left or a failure
        /// was recorded, and shows each sample to `also`.
        func compress(
            with compressor: ZstdCompressor, into frames: Frames, next: AtomicCounter, failures: FirstFailure,
            also: (Int, UnsafeRawBufferPointer) -> Void = { _, _ in }
        ) {
            while !failures.hasFailure {
                let i = next.increment()
                guard i < lengths.count else { return }
                do {
                    try joined.withUnsafeBytes { all in
                        let sample = UnsafeRawBufferPointer(rebasing: all[bounds[i]..<bounds[i] + lengths[i]])
                        let frame = try compressor.compress(sample)
                        _ = frames.total.valueAdd(frame.count)
                        frames.frames.set(i, frame)
                        also(i, sample)
                    }
                } catch {
                    failures.record(i, error)
                }
            }
        }
    }
}
