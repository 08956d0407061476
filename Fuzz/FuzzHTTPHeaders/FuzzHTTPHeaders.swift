@testable import BacklotHTTPClient
@testable import BacklotServer
import BacklotHTTPServer
import Foundation
import FuzzSupport
#if canImport(Glibc)
import Glibc
#endif

/// A small published tree, made once per process: a catalog, a content-addressed pack, an empty file.
let tree: StaticTree = {
    let root = NSTemporaryDirectory() + "/backlot-fuzz-tree-\(getpid())"
    let files: [(String, [UInt8])] = [
        ("v1/apps/com.example.app/production/catalog.json", Array(repeating: UInt8(ascii: "x"), count: 100)),
        ("v1/packs/" + String(repeating: "ab", count: 32) + ".pack", Array(0..<255)),
        ("empty", []),
    ]
    do {
        for (path, bytes) in files {
            let full = root + "/" + path
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: full))
        }
        treeRoot = root
        atexit { if let treeRoot { try? FileManager.default.removeItem(atPath: treeRoot) } }
        return try StaticTree(root: root)
    } catch {
        fatalError("FuzzHTTPHeaders: cannot make the tree: \(error)")
    }
}()
nonisolated(unsafe) var treeRoot: String?

/// libFuzzer harness for HTTP header parsing: the static tree's `Range` (RFC 9110 single byte
/// ranges) and `If-None-Match` handling and its path check, and the client's header-line parser.
///
/// The input is lines: the request path, the `Range` value, the `If-None-Match` value, a file
/// size for `StaticTree.range` alone, then header lines as libcurl hands them to the client.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzDriver.bytes(data, size)
    let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    func line(_ i: Int) -> String? { i < lines.count ? lines[i] : nil }

    let path = line(0) ?? "/"
    if let relative = StaticTree.safeRelativePath(path) {
        let parts = relative.split(separator: "/", omittingEmptySubsequences: false)
        if !relative.isEmpty, parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." || $0.contains("\0") || $0.contains("\\") }) {
            fatalError("safeRelativePath let through \(relative.debugDescription)")
        }
    }

    var sizes: [UInt64] = [0, 1, 100, UInt64.max]
    if let text = line(3), let n = UInt64(text) { sizes.append(n) }
    for fileSize in sizes {
        switch StaticTree.range(line(1), size: fileSize) {
        case .full, .unsatisfiable: break
        case .partial(let start, let end):
            guard start <= end, end < fileSize else { fatalError("range \(start)-\(end) for \(fileSize) bytes from \(line(1) ?? "")") }
        }
    }

    var headers: [String: String] = [:]
    if let range = line(1) { headers["range"] = range }
    if let match = line(2) { headers["if-none-match"] = match }
    for p in [path, "/v1/apps/com.example.app/production/catalog.json", "/v1/packs/" + String(repeating: "ab", count: 32) + ".pack", "/empty"] {
        let response = tree.respond(to: HTTPRequest(method: "GET", path: p, headers: headers))
        if case .descriptor(let fd, let offset, let length) = response.body {
            close(fd)
            guard response.status == 200 || response.status == 206, offset <= 255, length <= 255 - offset + 1 else {
                fatalError("a \(response.status) answer of \(length) bytes from \(offset)")
            }
        }
    }

    var received: [String: String] = [:]
    for text in lines.dropFirst(4) {
        var cString = Array(text.utf8CString.dropLast())
        _ = cString.withUnsafeMutableBufferPointer { parseHeaderLine($0.baseAddress, $0.count, into: &received) }
    }
    return 0
}

@_cdecl("FuzzHTTPHeaders_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    FuzzDriver.run(argc, argv, fuzz)
}
