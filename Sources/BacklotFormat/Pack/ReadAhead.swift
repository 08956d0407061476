import BacklotBasics
import BacklotCrypto

/// The first small files of a selection, read, cut and hashed by the threads that would otherwise
/// wait while ``PackDictionary`` trains the dictionary on one of them: a file's chunks and their
/// IDs do not depend on the dictionary (only their frames do), so once it is trained these files
/// are only compressed (``SmallBatch/pack(_:root:buffer:chunker:compressor:alreadyStored:ahead:)``).
///
/// It changes when work is done, never what is made: the pack is the same bytes with or without
/// it. A file that cannot be read ahead (it changed, or an error) is left out, and read again in
/// its turn, where its error is reported as before (so a file that fails here is opened twice). At
/// most ``budget`` bytes of at most a batch's number of files are held, and each file's are freed
/// when it is taken.
final class ReadAhead: Sendable {
    /// One file read ahead: its bytes, its chunks (ID and length, in order) and its SHA-256.
    struct File: Sendable {
        let bytes: [UInt8]
        let chunks: [SmallBatch.Cut]
        let digest: SHA256Digest
    }

    /// The most bytes read ahead by default (a small batch's worth).
    static let budget = SmallBatch.byteLimit

    /// The files that may be read ahead: their numbers in the selection, ascending.
    private let files: [Int]
    private let results: IndexedResults<File>
    private let next = AtomicCounter()
    private let selection: [SourceSelection.File]
    /// What cuts them (the pack's chunker: the chunks must be those of a file packed in its turn).
    private let chunker: Chunker

    /// The small files at the start of `selection`, up to `budget` bytes and a small batch's
    /// number of files (so that what it holds is bounded whatever the files' sizes), cut by
    /// `chunker`, but for those numbered in `skipping` (ascending: the dictionary's samples,
    /// read already).
    init(
        selection: [SourceSelection.File], chunker: Chunker, skipping: [Int] = [], budget: UInt64 = ReadAhead.budget
    ) {
        var files: [Int] = []
        var bytes: UInt64 = 0
        var skipped = skipping.makeIterator()
        var nextSkipped = skipped.next()
        for (index, file) in selection.enumerated() where file.size <= SmallBatch.fileLimit {
            while let s = nextSkipped, s < index { nextSkipped = skipped.next() }
            if nextSkipped == index { continue }
            guard bytes + file.size <= budget, files.count < SmallBatch.countLimit else { break }
            files.append(index)
            bytes += file.size
        }
        self.files = files
        self.results = IndexedResults(count: files.count)
        self.selection = selection
        self.chunker = chunker
    }

    /// Reads, cuts and hashes files in order until every one is taken or `done` says to stop
    /// (checked between two files). Called by several threads at once; each file is read by one.
    func run(root: DirectoryHandle, until done: () -> Bool) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: SmallBatch.fileLimit + 1, alignment: 16)
        defer { buffer.deallocate() }
        while !done() {
            let slot = next.increment()
            guard slot < files.count else { return }
            // Left out on any failure: the file is read again in its turn, which reports it.
            guard let count = try? SmallBatch.read(selection[files[slot]], root: root, into: buffer) else { continue }
            let content = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            let (chunks, digest) = SmallBatch.cut(content, chunker: chunker)
            results.set(slot, File(bytes: Array(content), chunks: chunks, digest: digest))
        }
    }

    /// The file numbered `index` in the selection, if it was read ahead, moved out. Called only
    /// once every ``run(root:until:)`` has returned; a file is taken by one thread.
    func take(_ index: Int) -> File? {
        guard let last = files.last, index <= last else { return nil }
        var low = 0
        var high = files.count
        while low < high {
            let middle = (low + high) / 2
            if files[middle] < index { low = middle + 1 } else { high = middle }
        }
        guard low < files.count, files[low] == index else { return nil }
        return results.takeIfSet(low)
    }
}
