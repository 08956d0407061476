import BacklotBasics
import CCrypto
import Foundation

/// What a client pins of a TLS server: the SHA-256 of its certificate's public key (the
/// DER-encoded SubjectPublicKeyInfo, as HPKP and libcurl's `CURLOPT_PINNEDPUBLICKEY` define it),
/// which stays the same when a certificate is renewed with the same key.
///
/// ```swift
/// let pin = try CertificateKey.publicKeySHA256(ofCertificateDER: chain[0])
/// let option = "sha256//" + Data(pin).base64EncodedString()
/// ```
public enum CertificateKey {
    /// The SHA-256 of the certificate's SubjectPublicKeyInfo.
    /// - Throws: ``BacklotError/Code/invalidInput`` when the bytes are not one DER certificate.
    public static func publicKeySHA256(ofCertificateDER der: [UInt8]) throws -> [UInt8] {
        guard !der.isEmpty, der.count <= 1 << 20 else {
            throw BacklotError(.invalidInput, "a certificate of \(der.count) bytes is not one (1 MiB at most)")
        }
        let cert = der.withUnsafeBufferPointer { b -> OpaquePointer? in
            var p: UnsafePointer<UInt8>? = b.baseAddress
            return d2i_X509(nil, &p, b.count)
        }
        guard let cert else { throw BacklotError(.invalidInput, "the bytes are not a DER certificate") }
        defer { X509_free(cert) }
        var spki: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert), &spki)
        guard length > 0, let spki else { throw Certificate.failure("read a certificate's public key") }
        defer { CRYPTO_free(spki, #fileID, #line) }
        return SHA256.hash(Array(UnsafeBufferPointer(start: spki, count: Int(length)))).bytes
    }

    /// The DER bytes of each certificate in PEM text (`-----BEGIN CERTIFICATE-----` blocks), in order.
    public static func derCertificates(inPEM text: String) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var rest = Substring(text)
        while let begin = rest.range(of: "-----BEGIN CERTIFICATE-----"),
            let end = rest.range(of: "-----END CERTIFICATE-----", range: begin.upperBound..<rest.endIndex)
        {
            let body = rest[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
            if let der = Data(base64Encoded: String(body)) { out.append(Array(der)) }
            rest = rest[end.upperBound...]
        }
        return out
    }
}
