/// The fixed Ed25519 seed of the fuzz corpus (32 bytes 0x01…0x20). A test key: it signs only the
/// files in Fuzz/Corpus/FuzzCatalog, made by `scripts/fuzz --make-corpus`.
enum FuzzCatalogKey {
    static let seed: [UInt8] = Array(1...32)
}
