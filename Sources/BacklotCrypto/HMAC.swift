import BacklotBasics
import CCrypto

/// HMAC-SHA256 (RFC 2104) through OpenSSL's libcrypto.
///
/// What AWS Signature Version 4 derives its signing key and signature with:
/// ```swift
/// let mac = HMACSHA256.authenticate(Array("message".utf8), key: Array("key".utf8))   // 32 bytes
/// ```
public enum HMACSHA256 {
    /// The number of bytes in a MAC.
    public static let byteCount = 32

    /// The MAC of `message` under `key` (any length; a key longer than 64 bytes is hashed first, as RFC 2104 says).
    public static func authenticate(_ message: [UInt8], key: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: byteCount)
        var length = 0
        let done = key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                out.withUnsafeMutableBytes { o in
                    EVP_Q_mac(
                        nil, "HMAC", nil, "SHA256", nil,
                        k.baseAddress ?? UnsafeRawPointer(bitPattern: 1), k.count,
                        m.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(bitPattern: 1), m.count,
                        o.baseAddress!.assumingMemoryBound(to: UInt8.self), o.count, &length)
                }
            }
        }
        precondition(done != nil && length == byteCount, "OpenSSL HMAC-SHA256 failed")
        return out
    }

    /// The MAC of the UTF-8 bytes of `message` under `key`.
    public static func authenticate(_ message: String, key: [UInt8]) -> [UInt8] {
        authenticate(Array(message.utf8), key: key)
    }
}
