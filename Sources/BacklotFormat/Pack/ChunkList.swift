/// A file's chunk numbers (indexes into ``PackIndex/chunks``), in file order. Most files of a
/// pack of small files have exactly one chunk, which is held inline: an array of one costs a heap
/// block of 48 bytes, 10 MB for 200,000 files in every reader of their index.
///
/// ```swift
/// let list: ChunkList = [4, 5]
/// for c in list { print(index.chunks[c].uncompressedSize) }
/// ```
public struct ChunkList: RandomAccessCollection, Hashable, Sendable, ExpressibleByArrayLiteral,
    CustomStringConvertible
{
    private enum Storage: Hashable, Sendable {
        case none
        case one(Int)
        case many([Int])
    }
    private let storage: Storage

    public init(_ chunks: [Int]) {
        switch chunks.count {
        case 0: storage = .none
        case 1: storage = .one(chunks[0])
        default: storage = .many(chunks)
        }
    }

    public init(arrayLiteral chunks: Int...) { self.init(chunks) }

    /// The list of one chunk, made without an array.
    init(only chunk: Int) { storage = .one(chunk) }

    public var startIndex: Int { 0 }
    public var endIndex: Int {
        switch storage {
        case .none: 0
        case .one: 1
        case .many(let all): all.count
        }
    }

    public subscript(position: Int) -> Int {
        switch storage {
        case .none: preconditionFailure("a file of no chunk has no chunk \(position)")
        case .one(let c):
            precondition(position == 0, "a file of one chunk has no chunk \(position)")
            return c
        case .many(let all): return all[position]
        }
    }

    public var description: String { Array(self).description }
}
