import BacklotBasics
import BacklotHTTPServer
import BacklotProtocol
import BacklotRepository
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
    /// The root, opened once; every file is opened beneath it through no link (``DirectoryHandle``).
    private let rootHandle: DirectoryHandle

    /// - Parameter headers: the cache rule; catalogs may be given another max-age than the
    ///   protocol's 60 s (`backlot serve --catalog-max-age`), for a CDN in front.
    public init(root: String, headers: PublishedTreeHeaders = PublishedTreeHeaders()) throws {
        try self.init(root: root, headers: headers, smallFiles: SmallFileCache())
    }

    /// A tree whose small files are kept by `smallFiles` (tests give other bounds).
    init(root: String, headers: PublishedTreeHeaders = PublishedTreeHeaders(), smallFiles: SmallFileCache) throws {
        self.headers = headers
        self.smallFiles = smallFiles
        guard let real = FileSystem.realPath(root), try FileSystem.status(real)?.kind == .directory else {
            throw BacklotError(.io, "the published tree does not exist", context: root)
        }
        self.root = real
        rootHandle = try DirectoryHandle(path: real)
    }

    /// Opens a relative path beneath the root without following any link; nil when it is not a
    /// regular file there. Returns the raw descriptor (the response owns it) and its status.
    func openBeneath(_ relative: String) -> (Int32, stat)? {
        guard let (fd, st) = try? rootHandle.openRegularFileWithStatus(relative) else { return nil }
        return (fd.rawValue, st)
    }

    /// The `Cache-Control` and `Content-Type` rule (docs/protocol.md §1), with its max-ages.
    public let headers: PublishedTreeHeaders
    /// The small files read lately, with their answers' headers.
    let smallFiles: SmallFileCache

    /// Headers on every answer of the tree — files, 304s, errors and 404s alike: no browser
    /// sniffs a file for another type than it is sent as, and a file opened in a browser (an
    /// uploaded pack's bytes, a catalog) runs nothing, loads nothing and is sandboxed, whatever
    /// it holds. (The dashboard's pages have their own policy.)
    public static let securityHeaders: [(name: String, value: String)] = [
        (name: "X-Content-Type-Options", value: "nosniff"),
        (name: "Content-Security-Policy", value: "default-src 'none'; sandbox"),
    ]

    /// Answers a GET or HEAD for a path of the tree, with the conditional requests of RFC 9110 §13
    /// evaluated in its order: `If-Match` (412), `If-Unmodified-Since` (412, only without
    /// `If-Match`), `If-None-Match` (304), `If-Modified-Since` (304, only without `If-None-Match`),
    /// then `Range` guarded by `If-Range` (a stale validator gets the whole file, 200). Every
    /// answer carries ``securityHeaders``.
    public func respond(to request: HTTPRequest) -> HTTPResponse {
        var r = answer(request)
        r.headers += Self.securityHeaders
        return r
    }

    func answer(_ request: HTTPRequest) -> HTTPResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            var r = HTTPResponse.error(
                405, code: .methodNotAllowed, "the published tree is read-only: use GET or HEAD", route: "static")
            r.headers.append(("Allow", "GET, HEAD"))
            return r
        }
        guard let relative = Self.safeRelativePath(request.path) else {
            return .error(400, code: .badPath, "the path is not a valid path of the tree", route: "static")
        }
        // Hidden files (any component starting with ".") are never served: temporaries, locks.
        guard !relative.isEmpty, !Self.hasHiddenComponent(relative), let opened = open(relative) else {
            return .error(404, code: .notFound, "no such file: /\(relative)", route: "static")
        }
        let st: stat
        let file: FileHeaders
        switch opened {
        case .kept(let kept): (st, file) = (kept.status, kept.headers)
        case .open(_, let status): (st, file) = (status, fileHeaders(relative, status))
        }
        let size = UInt64(st.st_size)
        let etag = file.etag
        let lastModified = file.lastModified
        let modified = Int64(st.st_mtim.tv_sec)
        var headers = file.all
        // The descriptor, if the file was opened, is the answer's or is closed here.
        func close() { if case .open(let fd, _) = opened { FileDescriptor(rawValue: fd, path: relative).close() } }
        func body(offset: UInt64, length: UInt64) -> HTTPResponse.Body {
            switch opened {
            case .open(let fd, _): return .descriptor(fd, offset: offset, length: length)
            case .kept(let kept):
                // Within the kept bytes: the range was checked against the same size.
                if offset == 0, length == size { return .bytes(kept.bytes) }
                return .bytes(Array(kept.bytes[Int(offset)..<Int(offset + length)]))
            }
        }
        func refuse(_ response: HTTPResponse) -> HTTPResponse {
            close()
            var r = response
            r.headers = headers.filter { $0.name != "Content-Type" } + r.headers
            return r
        }
        if let match = request.header("If-Match") {
            if !(match.trimmingCharacters(in: .whitespaces) == "*" || Self.entityTags(match).contains(etag)) {
                return refuse(
                    .error(
                        412, code: .preconditionFailed, "If-Match does not match the current ETag \(etag)",
                        route: "static"))
            }
        } else if let text = request.header("If-Unmodified-Since"), let date = HTTPDate.parse(text), modified > date {
            return refuse(
                .error(412, code: .preconditionFailed, "the file was modified after \(text)", route: "static"))
        }
        let notModified: Bool
        if let match = request.header("If-None-Match") {
            notModified =
                match.trimmingCharacters(in: .whitespaces) == "*"
                // weak comparison (RFC 9110 §13.1.2)
                || Self.entityTags(match).contains { $0 == etag || $0 == "W/" + etag }
        } else if let text = request.header("If-Modified-Since"), let date = HTTPDate.parse(text) {
            notModified = modified <= date
        } else {
            notModified = false
        }
        if notModified {
            close()
            // No body; the Content-Length libmicrohttpd writes is the representation's own (RFC 9110 §8.6), never 0.
            return HTTPResponse(status: 304, headers: headers, body: .representation(length: size), route: "static")
        }
        var rangeHeader = request.header("Range")
        if rangeHeader != nil, let condition = request.header("If-Range"),
            !Self.ifRangeHolds(condition, etag: etag, lastModified: lastModified)
        {
            rangeHeader = nil  // a stale validator: the whole representation, never a part of a changed one
        }
        switch Self.range(rangeHeader, size: size) {
        case .full:
            return HTTPResponse(
                status: 200, headers: headers, body: body(offset: 0, length: size), route: "static")
        case .partial(let start, let end):
            headers.append(("Content-Range", "bytes \(start)-\(end)/\(size)"))
            return HTTPResponse(
                status: 206, headers: headers, body: body(offset: start, length: end - start + 1),
                route: "static")
        case .unsatisfiable:
            var r = HTTPResponse.error(416, code: .rangeNotSatisfiable, "the file has \(size) bytes", route: "static")
            r.headers.append(("Content-Range", "bytes */\(size)"))
            return refuse(r)
        }
    }

    /// A file of the tree as a request finds it: kept in memory, or opened (the descriptor is the
    /// answer's, or closed once it is refused).
    enum Opened {
        case kept(SmallFileCache.File)
        case open(Int32, stat)
    }

    /// The file at `relative`: the kept copy while it is still the file there; otherwise opened
    /// beneath the root, and kept when small and settled (``SmallFileCache``). Nil when no regular
    /// file is there.
    func open(_ relative: String) -> Opened? {
        if let kept = smallFiles.file(at: relative, beneath: rootHandle) { return .kept(kept) }
        guard let (fd, st) = openBeneath(relative) else { return nil }
        if let kept = smallFiles.admit(
            relative, beneath: rootHandle, fd: fd, status: st, headers: { fileHeaders(relative, $0) })
        {
            FileDescriptor(rawValue: fd, path: relative).close()
            return .kept(kept)
        }
        return .open(fd, st)
    }

    /// What the answers for a file say of it, made from its status.
    struct FileHeaders: Sendable {
        let etag: String
        let lastModified: String
        /// ETag, Last-Modified, Accept-Ranges, Cache-Control and Content-Type, in that order.
        let all: [(name: String, value: String)]
    }

    func fileHeaders(_ relative: String, _ st: stat) -> FileHeaders {
        let file = PublishedTreeLayout(path: relative)  // once: the ETag and both headers depend on it
        let etag = Self.etag(file: file, stat: st)
        let lastModified = HTTPDate.format(Int64(st.st_mtim.tv_sec))
        return FileHeaders(
            etag: etag, lastModified: lastModified,
            all: [
                ("ETag", etag),
                ("Last-Modified", lastModified),
                ("Accept-Ranges", "bytes"),
                ("Cache-Control", headers.cacheControl(relative, file: file)),
                ("Content-Type", PublishedTreeHeaders.contentType(relative, file: file)),
            ])
    }

    /// Whether a component of `relative` starts with "." (a hidden file: never served).
    static func hasHiddenComponent(_ relative: String) -> Bool {
        var atStart = true
        for byte in relative.utf8 {
            if atStart && byte == UInt8(ascii: ".") { return true }
            atStart = byte == BytePath.separator
        }
        return false
    }

    /// The entity tags of an `If-Match` / `If-None-Match` list (`"a", W/"b"`), as written.
    static func entityTags(_ list: String) -> [String] {
        list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// Whether `If-Range` lets a Range apply: only a strong ETag that is the current one, or a date
    /// that is exactly the current `Last-Modified` (RFC 9110 §13.1.5). A weak tag never does.
    static func ifRangeHolds(_ condition: String, etag: String, lastModified: String) -> Bool {
        let value = condition.trimmingCharacters(in: .whitespaces)
        if value.hasPrefix("W/") { return false }
        if value.hasPrefix("\"") { return value == etag }
        guard let date = HTTPDate.parse(value), let current = HTTPDate.parse(lastModified) else { return false }
        return date == current
    }

    /// The path without its leading `/`, or nil when a component is empty, `.`, `..`, or holds NUL or `\`.
    public static func safeRelativePath(_ path: String) -> String? {
        guard path.utf8.first == BytePath.separator else { return nil }
        let relative = String(decoding: path.utf8.dropFirst(), as: UTF8.self)
        if relative.isEmpty { return "" }
        guard BytePath.isSafeRelative(relative), !relative.utf8.contains(UInt8(ascii: "\\")) else { return nil }
        return relative
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
        let first = spec[..<dash]
        let last = spec[spec.index(after: dash)...]
        if first.isEmpty {
            guard let n = CheckedInteger.parse(last, as: UInt64.self) else { return .full }
            guard n > 0, size > 0 else { return .unsatisfiable }
            return .partial(size - min(n, size), size - 1)
        }
        guard let start = CheckedInteger.parse(first, as: UInt64.self) else { return .full }
        let end: UInt64
        if last.isEmpty {
            end = size == 0 ? 0 : size - 1
        } else {
            guard let e = CheckedInteger.parse(last, as: UInt64.self), e >= start else { return .full }
            end = min(e, size == 0 ? 0 : size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .partial(start, end)
    }

    /// Content-addressed packs (`v1/packs/SHA256.pack`) are tagged by their SHA-256 (their name);
    /// other files by inode, size and time.
    static func etag(file: PublishedTreeLayout?, stat st: stat) -> String {
        if let sha = file?.contentAddress { return "\"\(sha)\"" }
        // Bit patterns, not conversions: a file dated before 1970 has a negative time.
        let nanos =
            UInt64(bitPattern: Int64(st.st_mtim.tv_sec)) &* 1_000_000_000
            &+ UInt64(bitPattern: Int64(st.st_mtim.tv_nsec))
        return
            "\"\(String(UInt64(st.st_ino), radix: 16))-\(String(UInt64(st.st_size), radix: 16))-\(String(nanos, radix: 16))\""
    }
}
