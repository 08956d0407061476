import BacklotBasics
import CLinuxSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Serves a published tree (`DIR/public`) read-only, as a static host or CDN would: GET and HEAD,
/// one `Range` (206, suffix ranges, 416), `ETag` and `If-None-Match` (304), and cache headers
/// (`immutable` for content-addressed packs, a short `max-age` for catalogs and keys).
///
/// Paths never leave the root: `.`/`..`/empty components, NUL and `\` are refused, links are not
/// followed, and directories are not listed.
public struct StaticTree: Sendable {
    /// The resolved root folder.
    public let root: String
    private let rootDescriptor: Descriptor

    /// The root's open descriptor, for `openat2` beneath it; closed with the last copy of the tree.
    final class Descriptor: Sendable {
        let fd: Int32
        init(_ fd: Int32) { self.fd = fd }
        deinit { close(fd) }
    }

    public init(root: String) throws {
        guard let real = FileSystem.realPath(root), try FileSystem.status(real)?.kind == .directory else {
            throw BacklotError(.io, "the published tree does not exist", context: root)
        }
        self.root = real
        let fd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemCall.error("open", path: real) }
        rootDescriptor = Descriptor(fd)
    }

    /// Opens a relative path beneath the root without following any link (kernel-checked with
    /// openat2; checked with realpath on kernels without it). Returns the descriptor and its status.
    func openBeneath(_ relative: String) -> (Int32, stat)? {
        var fd = clinux_open_beneath(rootDescriptor.fd, relative)
        if fd < 0 && (errno == ENOSYS || errno == EPERM) {   // no openat2 (old kernel, or a seccomp filter that refuses it)
            let full = root + "/" + relative
            guard let real = FileSystem.realPath(full), real.hasPrefix(root + "/") else { return nil }
            fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        }
        guard fd >= 0 else { return nil }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            return nil
        }
        return (fd, st)
    }

    /// Seconds clients and caches may keep a catalog or key list.
    public static let catalogMaxAge = 60

    /// Answers a GET or HEAD for a path of the tree.
    public func respond(to request: HTTPRequest) -> HTTPResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            var r = HTTPResponse.error(405, code: "methodNotAllowed", "the published tree is read-only: use GET or HEAD", route: "static")
            r.headers.append(("Allow", "GET, HEAD"))
            return r
        }
        guard let relative = Self.safeRelativePath(request.path) else {
            return .error(400, code: "badPath", "the path is not a valid path of the tree", route: "static")
        }
        guard !relative.isEmpty, let (fd, st) = openBeneath(relative) else {
            return .error(404, code: "notFound", "no such file: /\(relative)", route: "static")
        }
        let size = UInt64(st.st_size)
        let name = relative.split(separator: "/").last.map(String.init) ?? relative
        let etag = Self.etag(name: name, stat: st)
        var headers: [(name: String, value: String)] = [
            ("ETag", etag),
            ("Accept-Ranges", "bytes"),
            ("Cache-Control", Self.cacheControl(name)),
            ("Content-Type", Self.contentType(name)),
        ]
        if let match = request.header("If-None-Match"),
           match == "*" || match.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }).contains(where: { $0 == etag || $0 == "W/" + etag }) {
            close(fd)
            return HTTPResponse(status: 304, headers: headers, route: "static")
        }
        switch Self.range(request.header("Range"), size: size) {
        case .full:
            return HTTPResponse(status: 200, headers: headers, body: .descriptor(fd, offset: 0, length: size), route: "static")
        case .partial(let start, let end):
            headers.append(("Content-Range", "bytes \(start)-\(end)/\(size)"))
            return HTTPResponse(status: 206, headers: headers, body: .descriptor(fd, offset: start, length: end - start + 1), route: "static")
        case .unsatisfiable:
            close(fd)
            var r = HTTPResponse.error(416, code: "rangeNotSatisfiable", "the file has \(size) bytes", route: "static")
            r.headers.append(("Content-Range", "bytes */\(size)"))
            return r
        }
    }

    /// The path without its leading `/`, or nil when a component is empty, `.`, `..`, or holds NUL or `\`.
    public static func safeRelativePath(_ path: String) -> String? {
        let bytes = Array(path.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return nil }
        if bytes.count == 1 { return "" }
        var componentStart = 1
        for i in 1...bytes.count {
            if i == bytes.count || bytes[i] == UInt8(ascii: "/") {
                let c = bytes[componentStart..<i]
                if c.isEmpty || c.elementsEqual([UInt8(ascii: ".")]) || c.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")]) { return nil }
                componentStart = i + 1
            } else if bytes[i] == 0 || bytes[i] == UInt8(ascii: "\\") {
                return nil
            }
        }
        return String(decoding: bytes.dropFirst(), as: UTF8.self)
    }

    enum RangeAnswer: Equatable {
        case full
        case partial(UInt64, UInt64)
        case unsatisfiable
    }

    /// RFC 9110 single byte ranges. Malformed or multiple ranges are ignored (the whole file is sent).
    static func range(_ header: String?, size: UInt64) -> RangeAnswer {
        guard let header, header.hasPrefix("bytes=") else { return .full }
        let spec = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .full }
        let first = spec[..<dash], last = spec[spec.index(after: dash)...]
        if first.isEmpty {
            guard let n = UInt64(last) else { return .full }
            guard n > 0, size > 0 else { return .unsatisfiable }
            return .partial(size - min(n, size), size - 1)
        }
        guard let start = UInt64(first) else { return .full }
        let end: UInt64
        if last.isEmpty { end = size == 0 ? 0 : size - 1 } else {
            guard let e = UInt64(last), e >= start else { return .full }
            end = min(e, size == 0 ? 0 : size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .partial(start, end)
    }

    /// Content-addressed packs are tagged by their SHA-256 (their name); other files by inode, size and time.
    static func etag(name: String, stat st: stat) -> String {
        if name.hasSuffix(".pack"), name.count == 69, name.dropLast(5).allSatisfy({ $0.isHexDigit }) {
            return "\"\(name.dropLast(5))\""
        }
        let nanos = UInt64(st.st_mtim.tv_sec) &* 1_000_000_000 &+ UInt64(st.st_mtim.tv_nsec)
        return "\"\(String(UInt64(st.st_ino), radix: 16))-\(String(UInt64(st.st_size), radix: 16))-\(String(nanos, radix: 16))\""
    }

    static func cacheControl(_ name: String) -> String {
        if name.hasSuffix(".pack") || (name.hasPrefix("root-") && name.hasSuffix(".json")) { return "public, max-age=31536000, immutable" }
        if name.hasSuffix(".json") || name.hasSuffix(".pub") { return "public, max-age=\(catalogMaxAge)" }
        return "no-cache"
    }

    static func contentType(_ name: String) -> String {
        if name.hasSuffix(".json") { return "application/json" }
        if name.hasSuffix(".pub") || name.hasSuffix(".pem") { return "text/plain; charset=utf-8" }
        return "application/octet-stream"
    }
}
