import BacklotBasics
import CCurl
import Foundation

extension HTTPClient {
    /// The certificates a TLS server presents, leaf first, as PEM text (libcurl's
    /// `CURLOPT_CERTINFO`), read by a connection that trusts nothing and sends no request: what
    /// an app is shown to decide whether to trust the server (a server-trust challenge). Pin
    /// what it decides with `pinnedPublicKey` on the transfer that follows, so that the
    /// transfer meets the same key.
    ///
    /// ```swift
    /// let chain = try HTTPClient().serverCertificates(of: "https://cdn.example.com/levels.bin")
    /// ```
    /// - Throws: ``BacklotError/Code/io`` when the server cannot be reached or speaks no TLS.
    public func serverCertificates(of url: String) throws -> [String] {
        guard let handle = curl_easy_init() else { throw BacklotError(.library, "libcurl could not start a transfer") }
        defer { curl_easy_cleanup(handle) }
        configure(handle, url: url, headers: nil)
        _ = ccurl_setopt_long(handle, CURLOPT_CONNECT_ONLY, 1)
        _ = ccurl_setopt_long(handle, CURLOPT_CERTINFO, 1)
        // Shown, not trusted: the app decides; nothing is sent on this connection.
        _ = ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 0)
        _ = ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 0)
        let (code, detail) = perform(handle)
        guard code == CURLE_OK else { throw failure(code, detail, "CONNECT", url, as: .io, hint: nil) }
        var info: UnsafeMutablePointer<curl_certinfo>? = nil
        guard ccurl_getinfo_certinfo(handle, &info) == CURLE_OK, let info, let lists = info.pointee.certinfo else {
            return []
        }
        var chain: [String] = []
        for i in 0..<Int(max(0, min(info.pointee.num_of_certs, 16))) {
            var item = lists[i]
            while let entry = item {
                if let data = entry.pointee.data {
                    let text = String(cString: data)
                    if text.hasPrefix("Cert:") { chain.append(String(text.dropFirst(5))) }
                }
                item = entry.pointee.next
            }
        }
        return chain
    }
}
