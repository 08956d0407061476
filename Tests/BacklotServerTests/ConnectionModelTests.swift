import BacklotBasics
import BacklotHTTPClient
import BacklotRepository
import BacklotTestSupport
import Foundation
import Testing

@testable import BacklotHTTPServer
@testable import BacklotServer

#if canImport(Glibc)
import Glibc
#endif

/// The server's connection model on plain HTTP: libmicrohttpd's epoll loop on a small thread
/// pool holds 10,000 idle connections with a bounded number of threads while a normal client is
/// served; the per-address limit refuses what is past it; slow uploads on more connections than
/// there are pool threads do not starve a small GET; an upload's end (fsync, processing) is
/// answered from a worker while its connection is suspended.
@Suite(.serialized) struct ConnectionModelTests {
    /// Threads of this process (the server runs in it): the fewest of a few samples, since other
    /// suites running meanwhile start and end threads of their own.
    static func threadCount() -> Int {
        var fewest = Int.max
        for _ in 0..<10 {
            fewest = min(
                fewest, (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? Int.max)
            usleep(20_000)
        }
        return fewest
    }

    /// Threads of this process with this name (libmicrohttpd names a thread-per-connection
    /// thread "MHD-connection" and a pool thread "MHD-worker").
    static func threads(named name: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            ((try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? "").trimmingCharacters(
                in: .whitespacesAndNewlines) == name
        }.count
    }

    /// A loopback TCP connection to `port` (blocking), or -1.
    static func connectLoopback(_ port: UInt16) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if connected != 0 {
            close(fd)
            return -1
        }
        return fd
    }

    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// What the server sends on `fd` until it has sent a whole head and `Content-Length` bytes, or
    /// closes, or is silent for `seconds`.
    static func readResponse(_ fd: Int32, seconds: Int32 = 20) -> String {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while data.count < 1 << 20 {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, seconds * 1000) > 0 else { break }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            data += buffer[0..<n]
            let text = String(decoding: data, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let head = text[..<end.lowerBound].lowercased()
                let length =
                    head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst(15).trimmingCharacters(in: .whitespaces)) } ?? 0
                if text.utf8.count - text.utf8.distance(from: text.startIndex, to: end.upperBound) >= length { break }
            }
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Waits (bounded) until `condition` holds; returns whether it did.
    static func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<6000 {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    /// Holds `count` idle connections to a port from a child process (so that its descriptors are
    /// not this process's, which holds the server's ends): half send nothing, half a partial
    /// request line. It prints the number open and keeps them until its standard input closes.
    final class IdleClients {
        let process = Process()
        let input = Pipe(), output = Pipe()
        let opened: Int

        static let script = """
            import resource, socket, sys
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            port, count = int(sys.argv[1]), int(sys.argv[2])
            held = []
            try:
                for i in range(count):
                    s = socket.create_connection(("127.0.0.1", port), timeout=30)
                    if i % 2:
                        s.send(b"GET /v1/keys/root.js")
                    held.append(s)
            except OSError as e:
                print("error", len(held), e, flush=True)
            print("open", len(held), flush=True)
            sys.stdin.read()
            """

        init(port: UInt16, count: Int) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", Self.script, String(port), String(count)]
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            // Until the whole "open N" line arrived (2 minutes at most: 10,000 connections take a while).
            let text: String
            do {
                text = try Wait.output(
                    of: output.fileHandleForReading, "the idle clients say how many connections they opened",
                    timeout: .seconds(120)
                ) {
                    $0.split(separator: "\n", omittingEmptySubsequences: false).dropLast().contains {
                        $0.hasPrefix("open ")
                    }
                }
            } catch {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                throw error
            }
            print("idle clients: \(text.trimmingCharacters(in: .whitespacesAndNewlines))")
            let line = text.split(separator: "\n").first { $0.hasPrefix("open ") }
            opened = line.flatMap { Int($0.dropFirst(5)) } ?? 0
        }

        var isRunning: Bool { process.isRunning }

        /// Closes every connection (the child exits when its input ends).
        func release() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }

    func repository(_ dir: TemporaryDirectory) throws -> Repository {
        try Repository(directory: RepositoryDirectory(path: dir.at("data")))
    }

    @Test func tenThousandIdleConnectionsAreHeldWhileAClientIsServed() throws {
        let dir = try TemporaryDirectory("idle-10k")
        defer { dir.remove() }
        let before = Self.threadCount()
        let configuration = HTTPServer.Configuration(
            port: 0, connectionTimeout: 600, threads: 4, connectionsPerAddress: 0)
        let server = try HostingServer(repository: try repository(dir), configuration: configuration)
        defer { server.stop(grace: 0) }
        let descriptors = try DescriptorLimit.current()
        print("descriptor limit \(descriptors.soft) (hard \(descriptors.hard)); threads before the server \(before)")
        try #require(
            descriptors.soft >= 10_000 + UInt64(HTTPServer.reservedDescriptors),
            "this machine allows \(descriptors.soft) descriptors: 10,000 connections need more (ulimit -Hn)")

        let clients = try IdleClients(port: server.port, count: 10_000)
        defer { clients.release() }
        try #require(clients.opened == 10_000)
        // Every one of them is a connection the server holds (accepted, not waiting in the backlog).
        let open = { server.http.openConnections }
        #expect(Self.eventually { open() >= 10_000 }, "the server holds \(open()) connections")

        // In-process: this process now holds 10,000 descriptors (the server's side), past what
        // spawning a child (curl) through Foundation's Process copes with.
        let served = try HTTPClient().send("GET", "http://127.0.0.1:\(server.port)/v1/keys/root.json")
        #expect(
            served.status == 200 && served.text.contains("application/vnd.backlot.root+json"),
            "\(served.status) \(served.text.prefix(200))")
        let threads = Self.threadCount()
        // Still all open once the client was served, and no thread per connection.
        #expect(clients.isRunning && open() >= 10_000, "\(open()) connections open after the GET")
        print("threads while 10,000 connections are open: \(threads) (before the server: \(before))")
        // The whole process's threads: other suites run meanwhile and start servers of their own
        // (about ten threads each), so the bound is far from a thread per connection, not tight.
        #expect(threads - before < 1_000, "\(threads - before) more threads with 10,000 connections open")
        // None of them has a thread (other suites' HTTPS connections, running meanwhile, may).
        #expect(Self.threads(named: "MHD-connection") < 100)
    }

    @Test func thePerAddressLimitRefusesConnectionsPastIt() throws {
        let dir = try TemporaryDirectory("per-address")
        defer { dir.remove() }
        let server = try HostingServer(
            repository: try repository(dir), configuration: .init(port: 0, threads: 2, connectionsPerAddress: 4))
        defer { server.stop(grace: 0) }
        var held = (0..<4).map { _ in Self.connectLoopback(server.port) }
        defer { for fd in held where fd >= 0 { close(fd) } }
        #expect(held.allSatisfy { $0 >= 0 })
        #expect(Self.eventually { server.http.openConnections == 4 })

        // A fifth connection from the same address is closed at once: no answer.
        let refused = try Curl.run("http://127.0.0.1:\(server.port)/v1/keys/root.json")
        #expect(refused.status == 0 && refused.exitCode != 0, "\(refused.status) curl exit \(refused.exitCode)")
        let fifth = Self.connectLoopback(server.port)
        defer { if fifth >= 0 { close(fifth) } }
        _ = Self.sendAll(fifth, Array("GET /v1/keys/root.json HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(Self.readResponse(fifth).isEmpty)

        // Once one of the four is closed, a new one is served.
        close(held.removeLast())
        #expect(Self.eventually { server.http.openConnections <= 3 })
        let served = try Curl.run("http://127.0.0.1:\(server.port)/v1/keys/root.json")
        #expect(served.status == 200, "\(served.status) curl exit \(served.exitCode)")
    }

    @Test func slowUploadsOnMoreConnectionsThanPoolThreadsDoNotStarveASmallGet() throws {
        let dir = try TemporaryDirectory("slow-uploads")
        defer { dir.remove() }
        let repository = try repository(dir)
        let configuration = HTTPServer.Configuration(port: 0, threads: 2, connectionsPerAddress: 0)
        let server = try HostingServer(repository: repository, configuration: configuration)
        defer { server.stop(grace: 0) }
        let token = try repository.tokens.create(role: .uploader)
        try repository.apps.create("a")
        try repository.apps.createPack(app: "a", id: "Levels")
        let size = 100_000
        let uploads = 3 * configuration.threads
        let versions = try (0..<uploads).map { _ in
            try repository.uploads.createVersion(app: "a", pack: "Levels", size: UInt64(size)).number
        }

        // Each upload sends its head and a first part of its body, then stalls.
        let sockets = versions.map { number -> Int32 in
            let fd = Self.connectLoopback(server.port)
            let head =
                "PUT /api/apps/a/packs/Levels/versions/\(number)/archive HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n"
                + "Content-Type: application/octet-stream\r\nContent-Length: \(size)\r\n\r\n"
            _ = Self.sendAll(fd, Array(head.utf8) + [UInt8](repeating: 7, count: 1000))
            return fd
        }
        defer { for fd in sockets where fd >= 0 { close(fd) } }
        #expect(sockets.allSatisfy { $0 >= 0 })
        #expect(Self.eventually { server.http.requestsInFlight == uploads })

        // A small GET is served while every upload is still in flight.
        let served = try Curl.run("http://127.0.0.1:\(server.port)/v1/keys/root.json")
        #expect(served.status == 200, "\(served.status) curl exit \(served.exitCode)")
        // The GET leaves the count in its completion callback, which runs after its bytes are sent.
        #expect(Wait.holds { server.http.requestsInFlight == uploads }, "\(server.http.requestsInFlight) in flight")

        // The uploads then end, each answered from a worker after its fsync: 202, processing begins.
        for fd in sockets { _ = Self.sendAll(fd, [UInt8](repeating: 7, count: size - 1000)) }
        for (fd, number) in zip(sockets, versions) {
            let answer = Self.readResponse(fd)
            #expect(answer.hasPrefix("HTTP/1.1 202"), "version \(number): \(answer.prefix(200))")
        }
        repository.uploads.waitForProcessing()
        #expect(Self.eventually { server.http.requestsInFlight == 0 })
    }

    @Test func aSlowUploadBodyIsAnsweredWhenItEndsAndTheConnectionIsKeptAlive() throws {
        let dir = try TemporaryDirectory("keep-alive-upload")
        defer { dir.remove() }
        let repository = try repository(dir)
        let server = try HostingServer(repository: repository, configuration: .init(port: 0, threads: 2))
        defer { server.stop(grace: 0) }
        let token = try repository.tokens.create(role: .uploader)
        try repository.apps.create("a")
        try repository.apps.createPack(app: "a", id: "Levels")
        let number = try repository.uploads.createVersion(app: "a", pack: "Levels", size: 3000).number
        let fd = Self.connectLoopback(server.port)
        defer { close(fd) }
        let head =
            "PUT /api/apps/a/packs/Levels/versions/\(number)/archive HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Length: 3000\r\n\r\n"
        _ = Self.sendAll(fd, Array(head.utf8))
        for _ in 0..<3 {  // in three parts, a moment apart
            _ = Self.sendAll(fd, [UInt8](repeating: 1, count: 1000))
            usleep(50_000)
        }
        #expect(Self.readResponse(fd).hasPrefix("HTTP/1.1 202"))
        // The same connection then takes a request routed on a worker (a DELETE) and a GET.
        _ = Self.sendAll(
            fd,
            Array(
                "DELETE /api/apps/a/packs/Levels/versions/\(number) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n"
                    .utf8))
        let deleted = Self.readResponse(fd)
        #expect(deleted.hasPrefix("HTTP/1.1 403"), "\(deleted.prefix(200))")  // an uploader may not delete
        _ = Self.sendAll(fd, Array("GET /v1/keys/root.json HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(Self.readResponse(fd).hasPrefix("HTTP/1.1 200"))
        repository.uploads.waitForProcessing()
    }

    @Test func threadsZeroRunsOneThreadPerConnectionAndStillServesAndUploads() throws {
        let dir = try TemporaryDirectory("thread-per-connection")
        defer { dir.remove() }
        let repository = try repository(dir)
        let server = try HostingServer(
            repository: repository, configuration: .init(port: 0, threads: 0, connectionsPerAddress: 0))
        defer { server.stop(grace: 0) }
        let token = try repository.tokens.create(role: .uploader)
        try repository.apps.create("a")
        try repository.apps.createPack(app: "a", id: "Levels")
        let number = try repository.uploads.createVersion(app: "a", pack: "Levels", size: 2000).number
        let idle = (0..<20).map { _ in Self.connectLoopback(server.port) }
        defer { for fd in idle where fd >= 0 { close(fd) } }
        #expect(Self.eventually { server.http.openConnections == 20 })
        // The model it names: a thread for each connection.
        #expect(Self.threads(named: "MHD-connection") >= 20)
        let fd = Self.connectLoopback(server.port)
        defer { close(fd) }
        let head =
            "PUT /api/apps/a/packs/Levels/versions/\(number)/archive HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Length: 2000\r\n\r\n"
        _ = Self.sendAll(fd, Array(head.utf8) + [UInt8](repeating: 3, count: 2000))
        #expect(Self.readResponse(fd).hasPrefix("HTTP/1.1 202"))
        let served = try Curl.run("http://127.0.0.1:\(server.port)/v1/keys/root.json")
        #expect(served.status == 200)
        repository.uploads.waitForProcessing()
    }
}
