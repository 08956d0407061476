import Foundation
import Synchronization
import Testing

/// The concurrency rule of docs/architecture.md, checked over the sources: no `NSLock`, every
/// `@unchecked Sendable` says why it is safe (a `// Safe because:` comment just above it) and names
/// the test that runs it on threads at once (which must exist), and
/// blocking work crosses to a thread through `BlockingPool` alone, so that a break of the rule
/// fails here rather than in review.
@Suite struct ConcurrencyRuleTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources").path

    /// Every Swift file under Sources, with its lines.
    static func files() throws -> [(path: String, lines: [Substring])] {
        let enumerator = try #require(FileManager.default.enumerator(atPath: sources))
        var files: [(String, [Substring])] = []
        for case let relative as String in enumerator where relative.hasSuffix(".swift") {
            let text = try String(contentsOfFile: sources + "/" + relative, encoding: .utf8)
            files.append((relative, text.split(separator: "\n", omittingEmptySubsequences: false)))
        }
        return files
    }

    @Test func everyUncheckedSendableSaysWhyItIsSafe() throws {
        let files = try Self.files()
        #expect(files.count > 100, "the sources were found at \(Self.sources)")
        var unproven: [String] = []
        var untested: [String] = []
        var count = 0
        for (path, lines) in files {
            for (i, line) in lines.enumerated() where line.contains("@unchecked Sendable") {
                let code = line.split(separator: "//", maxSplits: 1).first ?? ""
                guard code.contains("@unchecked Sendable"), !line.trimmingCharacters(in: .whitespaces).hasPrefix("///")
                else { continue }
                count += 1
                let above = lines[max(0, i - 8)..<i]
                guard above.contains(where: { $0.contains("// Safe because:") }) else {
                    unproven.append("\(path):\(i + 1)")
                    continue
                }
                // The comment block just above the declaration names the test that runs it on
                // threads at once, and that test exists.
                let block = lines[..<i].reversed().prefix { $0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
                let named = try Self.namedTests(in: block.joined(separator: " "))
                if named.isEmpty { untested.append("\(path):\(i + 1): no test named") }
                for (test, found) in named where !found { untested.append("\(path):\(i + 1): \(test) does not exist") }
            }
        }
        #expect(count > 0, "no @unchecked Sendable found: the search is broken")
        #expect(unproven.isEmpty, "without a `// Safe because:` comment above: \(unproven)")
        #expect(untested.isEmpty, "a proof names no test that runs it on threads, or a test that is gone: \(untested)")
    }

    /// The tests a proof names — `SuiteTests.testName` or `capi_test.c: test_name` (a suite's name
    /// alone is not a test) — each with whether it exists under Tests/.
    static func namedTests(in comment: String) throws -> [(String, Bool)] {
        let tests = URL(fileURLWithPath: sources).deletingLastPathComponent().appendingPathComponent("Tests").path
        var named: [(String, Bool)] = []
        let swiftName = try Regex(#"\b([A-Z][A-Za-z0-9]*Tests)\.([a-z][A-Za-z0-9]*)"#)
        for match in comment.matches(of: swiftName) {
            guard let suite = match.output[1].substring.map(String.init),
                let test = match.output[2].substring.map(String.init)
            else { continue }
            let file = try Self.testFiles(under: tests).first {
                $0.text.contains("struct \(suite)") || $0.text.contains("class \(suite)")
            }
            named.append((suite + "." + test, file?.text.contains("func \(test)(") == true))
        }
        let cName = try Regex(#"capi_test\.c: (test_[a-z_]+)"#)
        for match in comment.matches(of: cName) {
            guard let test = match.output[1].substring.map(String.init) else { continue }
            let c = try String(contentsOfFile: tests + "/CAPI/capi_test.c", encoding: .utf8)
            named.append(("capi_test.c: " + test, c.contains("static void \(test)(void)")))
        }
        return named
    }

    /// Every Swift file under Tests/, with its text (read once).
    static func testFiles(under tests: String) throws -> [(path: String, text: String)] {
        if let cached = testFileCache.withLock({ $0 }) { return cached }
        let enumerator = try #require(FileManager.default.enumerator(atPath: tests))
        var files: [(String, String)] = []
        for case let relative as String in enumerator where relative.hasSuffix(".swift") {
            files.append((relative, try String(contentsOfFile: tests + "/" + relative, encoding: .utf8)))
        }
        testFileCache.withLock { $0 = files }
        return files
    }
    private static let testFileCache = Mutex<[(path: String, text: String)]?>(nil)

    @Test func noNSLock() throws {
        let uses = try Self.files().flatMap { file in
            file.lines.enumerated().filter { $0.element.contains("NSLock") }.map { "\(file.path):\($0.offset + 1)" }
        }
        #expect(uses.isEmpty, "NSLock at \(uses): use a Mutex (Synchronization)")
    }

    /// The files that may start a thread or use a Dispatch queue without `BlockingPool`,
    /// each for its reason; anywhere else, blocking work goes through `BlockingPool` (`shared`,
    /// `longRunning` or a pool of its own), which names its threads and knows when they have ended.
    static let ownThreads: [String: String] = [
        "BacklotBasics/Concurrency/BlockingPool.swift": "the pool's own threads",
        "BacklotBasics/Concurrency/ThreadPriority.swift": "a thread whose nice value is lowered, alone",
        "BacklotHTTPServer/TLSGate.swift":
            "the HTTPS listener's accept loop and its sorters, named, counted and waited for",
        "BacklotCAPI/CSubscription.swift":
            "the thread a C subscriber's callbacks are delivered on, one per subscription",
        "BacklotFleet/FleetSimulator.swift":
            "the fleet's sampler and device workers, a bounded number joined at the end",
        "BacklotTaskScheduler/TaskScheduler.swift": "Apple's BGTaskScheduler calls handlers on a background queue",
        "BacklotFormat/Pack/Parallel.swift":
            "CPU-bound loops a caller waits for: concurrentPerform runs on the caller's thread too, never waiting for one",
        "BacklotClient/Downloads/DownloadManager.swift":
            "the URL downloads' background queue: private and serial, one transfer at a time (Apple's background session)",
        "BacklotBasics/Concurrency/RepeatingTimer.swift": "a timer's private serial queue, where its handler runs",
        "BacklotTestSupport/DripServer.swift": "a test server",
        "BacklotTestSupport/ScriptedHTTPServer.swift": "a test server answering as the test writes",
        "BacklotTestSupport/OnThreads.swift": "tests that run a type on threads of their own at once",
    ]

    @Test func blockingWorkGoesThroughTheBlockingPool() throws {
        let starts = [
            "Thread {", "Thread(block", "Thread.detachNewThread", "DispatchQueue.global()", "DispatchQueue(label",
            "DispatchQueue.concurrentPerform",
        ]
        var outside: [String] = []
        var allowedSeen = Set<String>()
        for (path, lines) in try Self.files() {
            for (i, line) in lines.enumerated() {
                let code = String(
                    line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                guard starts.contains(where: { Self.contains(code, word: $0) }) else { continue }
                if Self.ownThreads[path] != nil { allowedSeen.insert(path) } else { outside.append("\(path):\(i + 1)") }
            }
        }
        #expect(outside.isEmpty, "a thread or a Dispatch queue outside BlockingPool at \(outside)")
        let stale = Set(Self.ownThreads.keys).subtracting(allowedSeen)
        #expect(stale.isEmpty, "allowed but starting no thread any more (remove them from the list): \(stale.sorted())")
    }

    /// Whether `word` stands in `line` at the start of a name (`isHeldByCurrentThread {` is not `Thread {`).
    static func contains(_ line: String, word: String) -> Bool {
        var rest = line[...]
        while let range = rest.range(of: word) {
            let before = rest[..<range.lowerBound].last
            if before.map({ !($0.isLetter || $0.isNumber || $0 == "_") }) ?? true { return true }
            rest = rest[range.upperBound...]
        }
        return false
    }
}
