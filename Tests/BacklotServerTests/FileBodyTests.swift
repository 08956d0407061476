import BacklotBasics
import BacklotHTTPClient
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotHTTPServer

#if canImport(Glibc)
import Glibc
#endif

/// Large file answers: copied to the socket in blocks (``FileBody``, uncorked) while the budget
/// allows, else with sendfile; every byte arrives either way, an answer its file cannot fill ends
/// the connection, and the budget bounds how many are copied at once. Serialized: one test takes
/// every place of the process's budget.
@Suite(.serialized) struct FileBodyTests {
    /// Three blocks and a bit, so that an answer crosses block boundaries.
    static let size = 3 * FileBody.blockSize + 12_345

    /// A server answering /whole (the file), /range/START/COUNT (206) and /longer (4 KiB more
    /// than the file holds).
    static func server(_ path: String) throws -> HTTPServer {
        let size = UInt64(size)
        return try HTTPServer(configuration: .init(port: 0)) { request in
            let parts = request.path.split(separator: "/").map(String.init)
            switch parts.first {
            case "whole":
                return .respond(HTTPResponse(status: 200, body: .file(path: path, offset: 0, length: size)))
            case "range":
                guard parts.count == 3, let start = UInt64(parts[1]), let count = UInt64(parts[2]) else { break }
                return .respond(HTTPResponse(status: 206, body: .file(path: path, offset: start, length: count)))
            case "longer":
                return .respond(HTTPResponse(status: 200, body: .file(path: path, offset: 0, length: size + 4096)))
            default:
                break
            }
            return .respond(HTTPResponse.error(404, code: .notFound, "no \(request.path)"))
        }
    }

    static func file(_ dir: TemporaryDirectory) throws -> (path: String, bytes: [UInt8]) {
        var g = SeededGenerator(seed: 2026_1207)
        let bytes = g.bytes(size)
        return (try dir.write("body.bin", bytes), bytes)
    }

    @Test func everyByteArrivesWholeAndInRanges() throws {
        let dir = try TemporaryDirectory("file-body")
        defer { dir.remove() }
        let (path, bytes) = try Self.file(dir)
        let server = try Self.server(path)
        defer { server.stop(grace: 0) }
        let base = "http://127.0.0.1:\(server.port)/"
        let client = HTTPClient()
        let granted = FileBody.shared.granted
        let whole = try client.send("GET", base + "whole")
        #expect(whole.status == 200 && whole.body == bytes)
        // Within one block, across blocks, the end, one byte past the small-file limit.
        let ranges = [
            (65_537, 200_000), (100, 600_000), (Self.size - 70_000, 70_000), (5, (64 << 10) + 1),
        ]
        for (start, count) in ranges {
            let r = try client.send("GET", base + "range/\(start)/\(count)")
            #expect(r.status == 206 && r.body == Array(bytes[start..<start + count]), "\(start) +\(count)")
        }
        #expect(FileBody.shared.granted - granted >= 1 + ranges.count, "the answers were copied")
        #expect(FileBody.shared.inUse <= FileBody.shared.maximum)
    }

    /// Past the budget, answers go by sendfile: the same bytes. The test takes every place left
    /// (other suites' answers meanwhile go by sendfile too, which is what is tested) and gives back
    /// exactly those.
    @Test func pastTheBudgetAnswersGoBySendfileWithTheSameBytes() throws {
        let dir = try TemporaryDirectory("file-body-sendfile")
        defer { dir.remove() }
        let (path, bytes) = try Self.file(dir)
        let server = try Self.server(path)
        defer { server.stop(grace: 0) }
        var taken = 0
        while FileBody.shared.take() { taken += 1 }
        defer { for _ in 0..<taken { FileBody.shared.giveBack() } }
        let probe = open(path, O_RDONLY | O_CLOEXEC)
        #expect(FileBody(fd: probe, offset: 0, length: 1) == nil, "every place is taken")
        close(probe)
        let base = "http://127.0.0.1:\(server.port)/"
        #expect(try HTTPClient().send("GET", base + "whole").body == bytes)
        let r = try HTTPClient().send("GET", base + "range/100/600000")
        #expect(r.status == 206 && r.body == Array(bytes[100..<600_100]))
    }

    /// An answer announced longer than its file (the file changed meanwhile) ends the connection
    /// where the file ends: the client sees a short body, never made-up bytes; the server goes on.
    /// (From the descriptor, libmicrohttpd would instead leave the connection open until its idle
    /// timeout: the client would report a stall, not the bytes missing.)
    @Test func anAnswerItsFileCannotFillEndsTheConnection() throws {
        let dir = try TemporaryDirectory("file-body-short")
        defer { dir.remove() }
        let (path, bytes) = try Self.file(dir)
        let server = try Self.server(path)
        defer { server.stop(grace: 0) }
        let base = "http://127.0.0.1:\(server.port)/"
        #expect {
            _ = try HTTPClient(stallTimeout: 20).send("GET", base + "longer")
        } throws: { error in
            let e = error as? BacklotError
            return e?.code == .io && e?.message.contains("4096 bytes remaining") == true
        }
        #expect(try HTTPClient().send("GET", base + "whole").body == bytes)
    }

    @Test func theBudgetBoundsBodiesAndEachGivesItsPlaceBack() throws {
        let dir = try TemporaryDirectory("file-body-budget")
        defer { dir.remove() }
        let (path, bytes) = try Self.file(dir)
        let budget = FileBody.Budget(maximum: 2)
        func descriptor() -> Int32 { open(path, O_RDONLY | O_CLOEXEC) }
        var a = FileBody(fd: descriptor(), offset: 0, length: UInt64(bytes.count), budget: budget)
        let b = FileBody(fd: descriptor(), offset: 10, length: 100, budget: budget)
        #expect(a != nil && b != nil && budget.inUse == 2)
        let refused = descriptor()
        #expect(FileBody(fd: refused, offset: 0, length: 1, budget: budget) == nil)
        #expect(fcntl(refused, F_GETFD) >= 0, "a refused descriptor stays the caller's")
        close(refused)
        a = nil
        #expect(budget.inUse == 1)
        // A range past what a file offset holds is refused before it takes a place.
        let far = descriptor()
        #expect(FileBody(fd: far, offset: UInt64.max - 1, length: 2, budget: budget) == nil)
        #expect(FileBody(fd: far, offset: UInt64(Int64.max), length: 1, budget: budget) == nil)
        close(far)
        #expect(budget.inUse == 1)

        // Reads: at an offset, clipped to the length, and -2 past it or past the file's end.
        var buffer = [CChar](repeating: 0, count: 64)
        let read = buffer.withUnsafeMutableBufferPointer { b!.read(at: 90, into: $0.baseAddress!, 64) }
        #expect(read == 10)
        #expect(buffer.prefix(10).map { UInt8(bitPattern: $0) } == Array(bytes[100..<110]))
        #expect(buffer.withUnsafeMutableBufferPointer { b!.read(at: 100, into: $0.baseAddress!, 64) } == -2)
        let beyond = FileBody(fd: descriptor(), offset: UInt64(bytes.count) - 4, length: 100, budget: budget)
        #expect(buffer.withUnsafeMutableBufferPointer { beyond!.read(at: 0, into: $0.baseAddress!, 64) } == 4)
        #expect(buffer.withUnsafeMutableBufferPointer { beyond!.read(at: 4, into: $0.baseAddress!, 64) } == -2)
        withExtendedLifetime((b, beyond)) {}
    }
}
