import BacklotBasics
import CCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A local certificate authority for development servers: an ECDSA P-256 CA and server
/// certificates that Apple devices accept (serverAuth extended key usage, subject alternative
/// names, validity of at most 825 days), all as PEM.
///
/// A CA made for given names carries a critical nameConstraints extension: clients that trust it
/// accept certificates it issues for those names only (DNS names and their subdomains, the exact
/// IP addresses), so its key, once stolen, cannot impersonate any other site.
///
/// ```swift
/// let ca = try LocalCertificateAuthority.create(
///     commonName: "Backlot Local CA", permittedDNSNames: ["localhost"], permittedIPAddresses: ["127.0.0.1", "::1"])
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

    /// Makes a new CA valid for `days` that may issue certificates for `permittedDNSNames` (each
    /// with its subdomains; `*.example.com` permits `example.com` and below) and the exact
    /// `permittedIPAddresses` only: a critical nameConstraints extension says so, and clients that
    /// check it (OpenSSL, Apple's trustd, Chrome, Firefox, Go) refuse a certificate it signed for
    /// any other name.
    public static func create(
        commonName: String, permittedDNSNames: [String], permittedIPAddresses: [String], days: Int = 3650
    ) throws -> LocalCertificateAuthority {
        try create(
            commonName: commonName, days: days,
            nameConstraints: nameConstraintsValue(dnsNames: permittedDNSNames, ipAddresses: permittedIPAddresses))
    }

    /// Makes a new CA valid for `days` without name constraints: whoever holds its key can issue a
    /// certificate for any name that everyone trusting the CA accepts. For tests and throwaway
    /// CAs; a CA people are asked to trust should be made with
    /// ``create(commonName:permittedDNSNames:permittedIPAddresses:days:)``.
    public static func create(commonName: String, days: Int = 3650) throws -> LocalCertificateAuthority {
        try create(commonName: commonName, days: days, nameConstraints: nil)
    }

    private static func create(
        commonName: String, days: Int, nameConstraints: String?
    ) throws
        -> LocalCertificateAuthority
    {
        let key = try PKey.generateP256()
        var extensions: [(Int32, String)] = [
            (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"),
            (NID_key_usage, "critical,keyCertSign,cRLSign"),
            (NID_subject_key_identifier, "hash"),
        ]
        if let nameConstraints { extensions.append((NID_name_constraints, nameConstraints)) }
        let cert = try Certificate.build(
            subject: commonName, issuer: nil, publicKey: key, signingKey: key, days: days, extensions: extensions)
        defer { X509_free(cert) }
        return LocalCertificateAuthority(certificatePEM: try Certificate.pem(cert), privateKeyPEM: try key.pem())
    }

    /// `critical,permitted;DNS:…,permitted;IP:addr/mask,…` for OpenSSL's X509V3 configuration.
    static func nameConstraintsValue(dnsNames: [String], ipAddresses: [String]) throws -> String {
        try checkNames(dnsNames: dnsNames, ipAddresses: ipAddresses)
        var subtrees: [String] = []
        for name in dnsNames {
            let lower = name.lowercased()
            let subtree = lower.hasPrefix("*.") ? String(lower.dropFirst(2)) : lower
            if !subtrees.contains("permitted;DNS:" + subtree) { subtrees.append("permitted;DNS:" + subtree) }
        }
        for address in ipAddresses {
            let mask =
                address.contains(":")
                ? "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff" : "255.255.255.255"
            let entry = "permitted;IP:\(address)/\(mask)"
            if !subtrees.contains(entry) { subtrees.append(entry) }
        }
        guard !subtrees.isEmpty else {
            throw BacklotError(
                .invalidInput, "a name-constrained CA needs at least one DNS name or IP address to permit")
        }
        return "critical," + subtrees.joined(separator: ",")
    }

    /// Refuses names that are not plain DNS names (letters, digits, `-`, `_`, `.`, a leading `*.`)
    /// or IP addresses: they go into OpenSSL configuration strings, where `,` or `:` would add names.
    static func checkNames(dnsNames: [String], ipAddresses: [String]) throws {
        for name in dnsNames {
            let body = name.hasPrefix("*.") ? name.dropFirst(2) : Substring(name)
            let valid =
                !body.isEmpty && body.count <= 253 && !body.hasPrefix(".") && !body.contains("..")
                && body.unicodeScalars.allSatisfy {
                    $0.isASCII
                        && (CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_" || $0 == ".")
                }
            guard valid else {
                throw BacklotError(
                    .invalidInput, "'\(name)' is not a DNS name a certificate can name",
                    hint: "give host names of letters, digits, '-' and '.' (IDNs in their xn-- form), or IP addresses")
            }
        }
        for address in ipAddresses where IPAddress.bytes(address) == nil {
            throw BacklotError(.invalidInput, "'\(address)' is not an IP address")
        }
    }

    /// The names the CA's nameConstraints extension permits, as written in `ca-names.txt`: DNS
    /// names (each with its subdomains) and IP addresses (`addr/prefix` for a range wider than one
    /// address); `nil` for a CA without name constraints (one made by Backlot before they were
    /// added, or by ``create(commonName:days:)``).
    public func permittedNames() throws -> [String]? {
        let cert = try Certificate.load(certificatePEM)
        defer { X509_free(cert) }
        guard let nc = try Certificate.nameConstraints(cert) else { return nil }
        defer { NAME_CONSTRAINTS_free(nc) }
        var dns: [String] = []
        var ips: [String] = []
        let stack = nc.pointee.permittedSubtrees
        for i in 0..<(stack.map { OPENSSL_sk_num($0) } ?? 0) {
            guard let subtree = OPENSSL_sk_value(stack, i)?.assumingMemoryBound(to: GENERAL_SUBTREE.self),
                let base = subtree.pointee.base
            else { continue }
            switch base.pointee.type {
            case GEN_DNS:
                dns.append(Certificate.string(base.pointee.d.dNSName))
            case GEN_IPADD:
                ips.append(IPAddress.range(Certificate.bytes(base.pointee.d.iPAddress)))
            default:
                continue
            }
        }
        return dns + ips
    }

    /// Those of `dnsNames` and `ipAddresses` that the CA's name constraints do not permit (as
    /// OpenSSL decides it), in order; empty for a CA without name constraints.
    public func namesNotPermitted(dnsNames: [String], ipAddresses: [String]) throws -> [String] {
        try Self.checkNames(dnsNames: dnsNames, ipAddresses: ipAddresses)
        let cert = try Certificate.load(certificatePEM)
        defer { X509_free(cert) }
        guard let nc = try Certificate.nameConstraints(cert) else { return [] }
        defer { NAME_CONSTRAINTS_free(nc) }
        var refused: [String] = []
        for (name, san) in dnsNames.map({ ($0, "DNS:" + $0) }) + ipAddresses.map({ ($0, "IP:" + $0) }) {
            guard let probe = X509_new() else { throw Certificate.failure("allocate a certificate") }
            defer { X509_free(probe) }
            try Certificate.addExtensions([(NID_subject_alt_name, san)], to: probe, issuer: nil)
            if try !Certificate.permits(nc, probe) { refused.append(name) }
        }
        return refused
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
        let refused = try namesNotPermitted(dnsNames: dnsNames, ipAddresses: ipAddresses)
        guard refused.isEmpty else {
            throw BacklotError(
                .invalidInput,
                "the CA's name constraints do not permit \(refused.joined(separator: ", ")): clients would refuse the certificate",
                hint: "issue it from a CA made for these names")
        }
        let caKey = try PKey(pem: privateKeyPEM)
        let caCert = try Certificate.load(certificatePEM)
        defer { X509_free(caCert) }
        let key = try PKey.generateP256()
        let names = dnsNames.map { "DNS:\($0)" } + ipAddresses.map { "IP:\($0)" }
        // Without a DNS name the subject is not a host name: verifiers that apply DNS name
        // constraints to a subject common name that looks like one (OpenSSL) would refuse an address there.
        let cert = try Certificate.build(
            subject: dnsNames.first ?? "Backlot server", issuer: caCert, publicKey: key,
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
        // What clients check, on the certificate as issued: never hand out one they refuse.
        if let nc = try Certificate.nameConstraints(caCert) {
            defer { NAME_CONSTRAINTS_free(nc) }
            guard try Certificate.permits(nc, cert) else {
                throw BacklotError(.library, "the issued certificate breaks its CA's name constraints")
            }
        }
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

    /// The certificate's subject, as OpenSSL writes it on one line without the leading slash
    /// (`CN=Backlot Local CA (host)/O=Backlot`).
    public static func subject(ofCertificate pem: String) throws -> String {
        let cert = try Certificate.load(pem)
        defer { X509_free(cert) }
        var buffer = [CChar](repeating: 0, count: 512)
        guard X509_NAME_oneline(X509_get_subject_name(cert), &buffer, Int32(buffer.count)) != nil else {
            throw Certificate.failure("read a certificate's subject")
        }
        let line = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return line.hasPrefix("/") ? String(line.dropFirst()) : line
    }

    /// The certificate's expiry time, to the second it names (its `notAfter`).
    public static func notAfter(ofCertificate pem: String) throws -> Date {
        let cert = try Certificate.load(pem)
        defer { X509_free(cert) }
        var broken = tm()
        guard ASN1_TIME_to_tm(X509_get0_notAfter(cert), &broken) == 1 else {
            throw Certificate.failure("read a certificate's expiry")
        }
        return Date(timeIntervalSince1970: Double(timegm(&broken)))
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
            try addExtensions(extensions, to: cert, issuer: issuer ?? cert)
            guard X509_sign(cert, signingKey.pointer, EVP_sha256()) > 0 else { throw failure("sign the certificate") }
            return cert
        } catch {
            X509_free(cert)
            throw error
        }
    }

    /// Adds extensions given in OpenSSL's X509V3 configuration syntax.
    static func addExtensions(_ extensions: [(Int32, String)], to cert: OpaquePointer, issuer: OpaquePointer?) throws {
        var ctx = X509V3_CTX()
        X509V3_set_ctx(&ctx, issuer, cert, nil, nil, 0)
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &ctx, nid, value) else {
                throw failure("make the extension \(value)")
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(cert, ext, -1) == 1 else { throw failure("add the extension \(value)") }
        }
    }

    /// The certificate's nameConstraints extension (free it with NAME_CONSTRAINTS_free), or nil
    /// when it has none.
    static func nameConstraints(_ cert: OpaquePointer) throws -> UnsafeMutablePointer<NAME_CONSTRAINTS>? {
        var critical: Int32 = 0
        if let raw = X509_get_ext_d2i(cert, NID_name_constraints, &critical, nil) {
            return raw.assumingMemoryBound(to: NAME_CONSTRAINTS.self)
        }
        // -1: absent; -2: more than one; otherwise present but not decodable.
        guard critical == -1 else {
            ERR_clear_error()
            throw BacklotError(.invalidInput, "the CA certificate's name constraints cannot be read")
        }
        return nil
    }

    /// Whether the names of `cert` (subject alternative names, subject e-mail addresses, and a
    /// host-name-like common name when there is no DNS name) are within `nc`, as OpenSSL's
    /// verifier decides it.
    static func permits(_ nc: UnsafeMutablePointer<NAME_CONSTRAINTS>, _ cert: OpaquePointer) throws -> Bool {
        // NAME_CONSTRAINTS_check reads the subject alternative names OpenSSL caches on first use.
        _ = X509_get_extension_flags(cert)
        let names = NAME_CONSTRAINTS_check(cert, nc)
        let commonName = NAME_CONSTRAINTS_check_CN(cert, nc)
        ERR_clear_error()
        return names == X509_V_OK && commonName == X509_V_OK
    }

    static func string(_ s: UnsafeMutablePointer<ASN1_STRING>?) -> String {
        String(decoding: bytes(s), as: UTF8.self)
    }

    static func bytes(_ s: UnsafeMutablePointer<ASN1_STRING>?) -> [UInt8] {
        guard let s, let data = ASN1_STRING_get0_data(s) else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(s))))
    }
}

/// IP addresses as text and as bytes.
enum IPAddress {
    /// The 4 or 16 bytes of an IPv4 or IPv6 address, or nil.
    static func bytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// An address and mask of a name constraint (8 or 32 bytes) as `address`, or `address/prefix`
    /// when the mask is not all ones.
    static func range(_ bytes: [UInt8]) -> String {
        guard bytes.count == 8 || bytes.count == 32 else {
            return bytes.map { String(format: "%02x", $0) }.joined()
        }
        let half = bytes.count / 2
        let address = text(Array(bytes[..<half]))
        let mask = bytes[half...]
        if mask.allSatisfy({ $0 == 0xFF }) { return address }
        return address + "/" + String(mask.reduce(0) { $0 + $1.nonzeroBitCount })
    }

    static func text(_ bytes: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        guard bytes.withUnsafeBytes({ inet_ntop(family, $0.baseAddress, &buffer, 64) }) != nil else { return "?" }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
