// What `import BackgroundAssets` brings on Apple's platforms, brought by `import BacklotClient`:
// Foundation (URL, Data, Progress, Date) and, on Linux, FoundationNetworking (URLRequest,
// URLAuthenticationChallenge, URLCredential, URLSession.AuthChallengeDisposition), so that code
// written for Apple's framework builds by changing the import alone (docs/porting.md).
@_exported import Foundation

#if canImport(FoundationNetworking)
@_exported import FoundationNetworking
#endif

#if canImport(FoundationNetworking)
/// Apple's name for a server-trust challenge's method. swift-corelibs-foundation declares it
/// unavailable (it has no Security framework); Backlot delivers such challenges
/// (``ServerTrustProtectionSpace``), so the name is available again, with Apple's value.
// swift-format-ignore: AlwaysUseLowerCamelCase
public let NSURLAuthenticationMethodServerTrust = "NSURLAuthenticationMethodServerTrust"
#endif
