import BacklotBasics
import CCurl

#if canImport(Glibc)
import Glibc
#endif

/// A request body as libcurl reads it: bytes in memory or a range of a file, read by `pread`
/// (never past the length declared), with the bytes sent so far for a progress report. One type
/// for every transfer of ``HTTPClient`` (buffered and streamed).
final class UploadBody {
    enum Source {
        case memory([UInt8])
        case file(Int32)
    }
    private let source: Source
    private var offset: UInt64
    private(set) var remaining: UInt64
    /// The whole body's size (`Content-Length`).
    let total: UInt64
    private(set) var sent: UInt64 = 0
    /// Why reading stopped (a file that ended early), for the transfer's error.
    private(set) var failure: BacklotError?
    let progress: ((UInt64, UInt64) -> Void)?

    /// Opens `body` (a file is opened here and closed when this is released).
    /// - Throws: ``BacklotError/Code/io`` naming the file when it cannot be opened.
    init(_ body: HTTPClient.Body, progress: ((UInt64, UInt64) -> Void)? = nil) throws {
        self.progress = progress
        switch body {
        case .bytes(let bytes):
            source = .memory(bytes)
            offset = 0
            remaining = UInt64(bytes.count)
        case .file(let path, let start, let length):
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw SystemCall.error("open", path: path) }
            source = .file(fd)
            offset = start
            remaining = length
        }
        total = remaining
    }

    deinit {
        if case .file(let fd) = source { close(fd) }
    }

    /// Makes `handle`'s request an upload of this body with `method` (`PUT`, `POST`…). The body
    /// must outlive the transfer.
    func attach(to handle: UnsafeMutableRawPointer, method: String) {
        _ = ccurl_setopt_long(handle, CURLOPT_UPLOAD, 1)
        _ = ccurl_setopt_str(handle, CURLOPT_CUSTOMREQUEST, method)
        _ = ccurl_setopt_off(handle, CURLOPT_INFILESIZE_LARGE, curl_off_t(total))
        _ = ccurl_setopt_read(handle, Self.read)
        _ = ccurl_setopt_ptr(handle, CURLOPT_READDATA, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Copies up to `count` bytes of the body into `buffer`; 0 at its end, nil when the file could
    /// not be read as far as declared (``failure`` says so).
    private func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Int? {
        let want = min(count, Int(min(remaining, UInt64(Int.max))))
        guard want > 0 else { return 0 }
        let got: Int
        switch source {
        case .memory(let bytes):
            let start = Int(total - remaining)
            bytes.withUnsafeBytes { src in buffer.copyMemory(from: src.baseAddress! + start, byteCount: want) }
            got = want
        case .file(let fd):
            let n = pread(fd, buffer, want, off_t(offset))
            guard n > 0 else {
                failure = BacklotError(.io, "the file to upload ended early (or could not be read) at offset \(offset)")
                return nil
            }
            got = n
            offset += UInt64(n)
        }
        remaining -= UInt64(got)
        sent += UInt64(got)
        progress?(sent, total)
        return got
    }

    private static let read: curl_read_callback = { buffer, size, count, context in
        let body = Unmanaged<UploadBody>.fromOpaque(context!).takeUnretainedValue()
        guard let buffer else { return 0 }
        return body.read(into: UnsafeMutableRawPointer(buffer), count: size * count) ?? Int(CURL_READFUNC_ABORT)
    }
}
