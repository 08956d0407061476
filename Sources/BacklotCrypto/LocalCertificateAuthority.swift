import BacklotBasics
import CCrypto
import Foundation

/// A local certificate authority for development servers: an ECDSA P-256 CA and server
/// certificates that Apple devices accept (serverAuth extended key usage, subject alternative
/// names, validity of at most 825 days), all as PEM.
///
/// ```swift
/// let ca = try LocalCertificateAuthority.create(commonName: "Backlot Local CA")
/// let server = try ca.issueServerCertificate(dnsNames: ["localhost"], ipAddresses: ["127.0.0.1", "::1"])
/// ```
public struct LocalCertificateAuthority: Sendable {
    /// The CA certificate (PEM): what users trust.
    public let certificatePEM: String
    /// The CA's private key (PEM, PKCS#8).
    public let privateKeyPEM: String

    /// The longest server certificate Apple platforms accept.
    public static let maximumServerValidityDays = 825

    /// A server certificate and its key.
    public struct Issued: Sendable {
        public let certificatePEM: String
        public let privateKeyPEM: String
    }

    /// Makes a new CA valid for `days`.
    public static func create(commonName: String, days: Int = 3650) throws -> LocalCertificateAuthority {
        let key = try PKey.generateP256()
        let cert = try Certificate.build(
            subject: commonName, issuer: nil, publicKey: key, signingKey: key, days: days,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"),
                (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
            ])
        defer { X509_free(cert) }
        return LocalCertificateAuthority(certificatePEM: try Certificate.pem(cert), privateKeyPEM: try key.pem())
    }

    public init(certificatePEM: String, privateKeyPEM: String) {
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
    }

    /// Issues a server certificate for the given names and addresses.
    public func issueServerCertificate(
        dnsNames: [String], ipAddresses: [String], days: Int = maximumServerValidityDays
    ) throws -> Issued {
        precondition(
            days <= Self.maximumServerValidityDays,
            "Apple platforms refuse server certificates valid longer than 825 days")
        let caKey = try PKey(pem: privateKeyPEM)
        let caCert = try Certificate.load(certificatePEM)
        defer { X509_free(caCert) }
        let key = try PKey.generateP256()
        let names = dnsNames.map { "DNS:\($0)" } + ipAddresses.map { "IP:\($0)" }
        let cert = try Certificate.build(
            subject: dnsNames.first ?? ipAddresses.first ?? "localhost", issuer: caCert, publicKey: key,
            signingKey: caKey, days: days,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"),
                (NID_key_usage, "critical,digitalSignature"),
                (NID_ext_key_usage, "serverAuth"),
                (NID_subject_alt_name, names.joined(separator: ",")),
                (NID_subject_key_identifier, "hash"),
                (NID_authority_key_identifier, "keyid:always"),
            ])
        defer { X509_free(cert) }
        return Issued(certificatePEM: try Certificate.pem(cert), privateKeyPEM: try key.pem())
    }

    /// The SHA-256 fingerprint of a PEM certificate, as `AB:CD:…`.
    public static func fingerprint(ofCertificate pem: String) throws -> String {
        let cert = try Certificate.load(pem)
        defer { X509_free(cert) }
        var md = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 32
        guard X509_digest(cert, EVP_sha256(), &md, &length) == 1 else {
            throw Certificate.failure("fingerprint a certificate")
        }
        return md.map { String(format: "%02X", $0) }.joined(separator: ":")
    }

    /// The certificate's expiry time.
    public static func notAfter(ofCertificate pem: String) throws -> Date {
        let cert = try Certificate.load(pem)
        defer { X509_free(cert) }
        var days: Int32 = 0
        var seconds: Int32 = 0
        guard ASN1_TIME_diff(&days, &seconds, nil, X509_get0_notAfter(cert)) == 1 else {
            throw Certificate.failure("read a certificate's expiry")
        }
        return Date().addingTimeInterval(Double(days) * 86_400 + Double(seconds))
    }
}

/// An EVP_PKEY owned by Swift.
final class PKey {
    let pointer: OpaquePointer

    init(owning pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(pointer) }

    static func generateP256() throws -> PKey {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw Certificate.failure("create an EC key context")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer? = nil
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_CTX_set_group_name(ctx, "P-256") == 1,
            EVP_PKEY_generate(ctx, &key) == 1, let key
        else { throw Certificate.failure("generate a P-256 key") }
        return PKey(owning: key)
    }

    convenience init(pem: String) throws {
        let bio = try Certificate.memoryBIO(pem)
        defer { BIO_free(bio) }
        guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else {
            throw Certificate.failure("read a private key")
        }
        self.init(owning: key)
    }

    func pem() throws -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw Certificate.failure("allocate a buffer") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, pointer, nil, nil, 0, nil, nil) == 1 else {
            throw Certificate.failure("write a private key")
        }
        return Certificate.string(bio)
    }
}

/// X.509 helpers over libcrypto.
enum Certificate {
    static func failure(_ what: String) -> BacklotError {
        let code = ERR_get_error()
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, 256)
        ERR_clear_error()
        let detail = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return BacklotError(.library, "OpenSSL could not \(what)\(code == 0 ? "" : ": \(detail)")")
    }

    static func memoryBIO(_ text: String) throws -> OpaquePointer {
        let bytes = Array(text.utf8)
        guard let bio = BIO_new(BIO_s_mem()) else { throw failure("allocate a buffer") }
        guard bytes.withUnsafeBytes({ BIO_write(bio, $0.baseAddress, Int32(bytes.count)) }) == Int32(bytes.count) else {
            BIO_free(bio)
            throw failure("fill a buffer")
        }
        return bio
    }

    static func string(_ bio: OpaquePointer) -> String {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = BIO_read(bio, &chunk, Int32(chunk.count))
            if n <= 0 { break }
            out += chunk[0..<Int(n)]
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func load(_ pem: String) throws -> OpaquePointer {
        let bio = try memoryBIO(pem)
        defer { BIO_free(bio) }
        guard let cert = PEM_read_bio_X509(bio, nil, nil, nil) else { throw failure("read a certificate") }
        return cert
    }

    static func pem(_ cert: OpaquePointer) throws -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw failure("allocate a buffer") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_X509(bio, cert) == 1 else { throw failure("write a certificate") }
        return string(bio)
    }

    static func build(
        subject: String, issuer: OpaquePointer?, publicKey: PKey, signingKey: PKey, days: Int,
        extensions: [(Int32, String)]
    ) throws -> OpaquePointer {
        guard let cert = X509_new() else { throw failure("allocate a certificate") }
        do {
            guard X509_set_version(cert, 2) == 1 else { throw failure("set the version") }
            var serial = [UInt8](repeating: 0, count: 16)
            guard RAND_bytes(&serial, 16) == 1 else { throw failure("draw a serial number") }
            serial[0] &= 0x7F
            let bn = BN_bin2bn(serial, 16, nil)
            defer { BN_free(bn) }
            guard BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != nil else {
                throw failure("set the serial number")
            }
            guard X509_gmtime_adj(X509_getm_notBefore(cert), -3600) != nil,
                X509_gmtime_adj(X509_getm_notAfter(cert), days * 86_400) != nil
            else { throw failure("set the validity") }
            guard X509_set_pubkey(cert, publicKey.pointer) == 1 else { throw failure("set the public key") }
            let name = X509_get_subject_name(cert)
            // 0x1001 is MBSTRING_ASC.
            guard X509_NAME_add_entry_by_txt(name, "CN", 0x1001, subject, -1, -1, 0) == 1,
                X509_NAME_add_entry_by_txt(name, "O", 0x1001, "Backlot", -1, -1, 0) == 1
            else { throw failure("set the subject") }
            guard X509_set_issuer_name(cert, issuer.map { X509_get_subject_name($0) } ?? name) == 1 else {
                throw failure("set the issuer")
            }
            var ctx = X509V3_CTX()
            X509V3_set_ctx(&ctx, issuer ?? cert, cert, nil, nil, 0)
            for (nid, value) in extensions {
                guard let ext = X509V3_EXT_conf_nid(nil, &ctx, nid, value) else {
                    throw failure("make the extension \(value)")
                }
                defer { X509_EXTENSION_free(ext) }
                guard X509_add_ext(cert, ext, -1) == 1 else { throw failure("add the extension \(value)") }
            }
            guard X509_sign(cert, signingKey.pointer, EVP_sha256()) > 0 else { throw failure("sign the certificate") }
            return cert
        } catch {
            X509_free(cert)
            throw error
        }
    }
}
