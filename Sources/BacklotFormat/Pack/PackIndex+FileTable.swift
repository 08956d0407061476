import BacklotCrypto

extension PackIndex {
    /// The file table of an index, held by column: every path's bytes in one array, the modes,
    /// sizes, SHA-256s and chunk numbers in arrays of their own. A ``PackIndex/File`` is made when
    /// one is read (its path a new `String`).
    ///
    /// Why: a table of `File` values costs each file an 80-byte record plus a heap block for its
    /// path (64 bytes for `small/123/file-12345.dat`): 29 MB at 200,000 files, in every reader of
    /// the index, a device installing it among them. By column it is about 90 bytes a file, 18 MB.
    ///
    /// ```swift
    /// let table = PackIndex.FileTable([file])
    /// for file in table { print(file.path, file.size) }
    /// ```
    public struct FileTable: RandomAccessCollection, Sendable, Hashable {
        /// The paths' UTF-8 bytes, one after another; file `i`'s ends at `pathEnds[i]`.
        private var pathBytes: [UInt8] = []
        private var pathEnds: [Int] = []
        private var modes: [UInt32] = []
        private var sizes: [UInt64] = []
        private var digests: [SHA256Digest] = []
        /// The chunk numbers of every file, one after another; file `i`'s end at `chunkEnds[i]`.
        private var chunkNumbers: [UInt32] = []
        private var chunkEnds: [Int] = []

        public init() {}

        public init(_ files: some Sequence<File>) {
            for file in files {
                append(
                    path: file.path.utf8, mode: file.mode, size: file.size, digest: file.digest, chunks: file.chunks)
            }
        }

        /// Makes room for `count` files.
        mutating func reserveCapacity(_ count: Int) {
            pathEnds.reserveCapacity(count)
            modes.reserveCapacity(count)
            sizes.reserveCapacity(count)
            digests.reserveCapacity(count)
            chunkEnds.reserveCapacity(count)
            chunkNumbers.reserveCapacity(count)
        }

        /// Gives back the room the arrays that grew by doubling have left over (once every file is in).
        mutating func trimCapacity() {
            func trimmed<T>(_ a: [T]) -> [T] {
                guard a.capacity > a.count + a.count / 16 else { return a }
                return [T](unsafeUninitializedCapacity: a.count) { buffer, count in
                    _ = buffer.initialize(from: a)
                    count = a.count
                }
            }
            pathBytes = trimmed(pathBytes)
            chunkNumbers = trimmed(chunkNumbers)
        }

        /// Adds a file whose path is `path` (UTF-8, already checked by the caller).
        mutating func append(
            path: some Collection<UInt8>, mode: UInt32, size: UInt64, digest: SHA256Digest,
            chunks: some Collection<Int>
        ) {
            pathBytes.append(contentsOf: path)
            pathEnds.append(pathBytes.count)
            modes.append(mode)
            sizes.append(size)
            digests.append(digest)
            for c in chunks {
                // A chunk number is below the chunk count, which the format holds in 32 bits.
                guard let number = UInt32(exactly: c) else { preconditionFailure("chunk number \(c) out of range") }
                chunkNumbers.append(number)
            }
            chunkEnds.append(chunkNumbers.count)
        }

        public var startIndex: Int { 0 }
        public var endIndex: Int { pathEnds.count }

        public subscript(position: Int) -> File {
            let pathStart = position == 0 ? 0 : pathEnds[position - 1]
            let chunkStart = position == 0 ? 0 : chunkEnds[position - 1]
            let path = pathBytes.withUnsafeBufferPointer {
                String(decoding: UnsafeBufferPointer(rebasing: $0[pathStart..<pathEnds[position]]), as: UTF8.self)
            }
            let numbers = chunkNumbers[chunkStart..<chunkEnds[position]]
            let chunks = numbers.count == 1 ? ChunkList(only: Int(numbers.first!)) : ChunkList(numbers.map { Int($0) })
            return File(
                path: path, mode: modes[position], size: sizes[position], digest: digests[position], chunks: chunks)
        }

        /// The sum of the files' sizes, without making a ``File`` of each.
        public var totalSize: UInt64 { sizes.reduce(0, +) }
    }
}
