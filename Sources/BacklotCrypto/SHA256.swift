import BacklotBasics
import CCrypto

/// SHA-256 through OpenSSL's libcrypto (which uses the CPU's SHA extensions where present).
///
/// One-shot: `SHA256.hash(bytes)`. Incremental:
/// ```swift
/// var hasher = SHA256()
/// hasher.update(part1)
/// hasher.update(part2)
/// let digest = hasher.finalize()
/// ```
public struct SHA256: ~Copyable {
    private let context: OpaquePointer

    /// Starts a new digest.
    public init() {
        guard let ctx = EVP_MD_CTX_new(), EVP_DigestInit_ex(ctx, EVP_sha256(), nil) == 1 else {
            fatalError("OpenSSL could not initialise SHA-256 (out of memory?)")
        }
        context = ctx
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Adds bytes to the digest.
    public mutating func update(_ buffer: UnsafeRawBufferPointer) {
        guard buffer.count > 0 else { return }
        EVP_DigestUpdate(context, buffer.baseAddress, buffer.count)
    }

    /// Adds bytes to the digest.
    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Finishes and returns the digest.
    public consuming func finalize() -> SHA256Digest {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &out, &length)
        return SHA256Digest(bytes: out)
    }

    /// The digest of `buffer`.
    public static func hash(_ buffer: UnsafeRawBufferPointer) -> SHA256Digest {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = EVP_Digest(
            buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), buffer.count, &out, &length, EVP_sha256(), nil)
        precondition(ok == 1, "OpenSSL SHA-256 failed")
        return SHA256Digest(bytes: out)
    }

    /// The digest of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> SHA256Digest {
        bytes.withUnsafeBytes { hash($0) }
    }
}

extension SHA256 {
    /// The digest of a whole file, read in 256 KiB pieces.
    /// - Throws: ``BacklotError/Code/io`` when it cannot be read.
    public static func hash(fileAt path: String) throws -> SHA256Digest {
        let fd = try FileDescriptor.openForReading(path)
        defer { fd.close() }
        return try hash(descriptor: fd)
    }

    /// The digest of everything an open file holds, read from offset 0 in 256 KiB pieces (the
    /// descriptor's own position is not used or moved). The buffer is not zeroed, and small enough
    /// that malloc reuses it from call to call (a device maps blocks of 1 MiB or more on their own,
    /// ``MemoryArenas``: a 1 MiB buffer cost each file hashed a mapping and its page faults).
    /// - Throws: ``BacklotError/Code/io`` when it cannot be read.
    public static func hash(descriptor fd: FileDescriptor) throws -> SHA256Digest {
        var hasher = SHA256()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
        defer { buffer.deallocate() }
        var offset: UInt64 = 0
        while true {
            let n = try fd.read(into: buffer, at: offset)
            if n == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            offset += UInt64(n)
        }
        return hasher.finalize()
    }
}
