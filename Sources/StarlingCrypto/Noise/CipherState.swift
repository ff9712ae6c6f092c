import Crypto
import Foundation

/// A Noise CipherState (§5.1) for ChaChaPoly: a key and a 64-bit nonce.
///
/// The AEAD nonce is 4 zero bytes followed by the counter, little-endian.
public struct CipherState: Sendable {
    public static let tagSize = 16

    private var key: SymmetricKey?
    /// The next nonce `encrypt`/`decrypt` will use.
    public private(set) var nonce: UInt64 = 0

    public init() {}

    public init(key: [UInt8]) {
        self.key = SymmetricKey(data: key)
    }

    public var hasKey: Bool { key != nil }

    /// The ChaChaPoly nonce for a counter value.
    @inline(__always)
    static func nonceBytes(_ n: UInt64) -> (UInt32, UInt32, UInt32) {
        // 12 bytes: 4 zero bytes, then the counter little-endian.
        (0, UInt32(truncatingIfNeeded: n).littleEndian, UInt32(truncatingIfNeeded: n >> 32).littleEndian)
    }

    @inline(__always)
    static func aeadNonce(_ n: UInt64) -> ChaChaPoly.Nonce {
        withUnsafeBytes(of: nonceBytes(n)) { try! ChaChaPoly.Nonce(data: $0) }
    }

    /// Encrypts with an explicit nonce, leaving the internal counter alone.
    public func encrypt(nonce n: UInt64, ad: [UInt8], plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        var out = [UInt8]()
        try encrypt(nonce: n, ad: ad, plaintext: plaintext, appendingTo: &out)
        return out
    }

    /// Encrypts with an explicit nonce and appends ciphertext ‖ tag to `out`
    /// (one copy of the output, for framing without further copies).
    public func encrypt(nonce n: UInt64, ad: [UInt8], plaintext: [UInt8], appendingTo out: inout [UInt8]) throws(NoiseError) {
        guard let key else {
            out.append(contentsOf: plaintext)
            return
        }
        guard n != .max else { throw .nonceExhausted }
        do {
            let box = try plaintext.withUnsafeBytes { p in
                try ad.withUnsafeBytes { a in
                    try ChaChaPoly.seal(p, using: key, nonce: Self.aeadNonce(n), authenticating: a)
                }
            }
            // combined = nonce (12) ‖ ciphertext ‖ tag: copy all but the nonce at once.
            let combined = box.combined
            out.reserveCapacity(out.count + combined.count - 12)
            combined.withUnsafeBytes { out.append(contentsOf: $0[12...]) }
        } catch {
            throw .decryptionFailed
        }
    }

    /// Decrypts with an explicit nonce, leaving the internal counter alone.
    public func decrypt(nonce n: UInt64, ad: [UInt8], ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        try decrypt(nonce: n, ad: ad, ciphertext: ciphertext[...])
    }

    /// Decrypts ciphertext ‖ tag given as a slice (for example a frame past its header).
    public func decrypt(nonce n: UInt64, ad: [UInt8], ciphertext: ArraySlice<UInt8>) throws(NoiseError) -> [UInt8] {
        guard let key else { return Array(ciphertext) }
        guard n != .max else { throw .nonceExhausted }
        guard ciphertext.count >= Self.tagSize else { throw .decryptionFailed }
        do {
            // Build the combined form (nonce ‖ ciphertext ‖ tag) with one copy.
            var combined = Data(capacity: 12 + ciphertext.count)
            withUnsafeBytes(of: Self.nonceBytes(n)) { combined.append(contentsOf: $0) }
            ciphertext.withUnsafeBytes { combined.append(contentsOf: $0) }
            let box = try ChaChaPoly.SealedBox(combined: combined)
            let plain = try ad.withUnsafeBytes { try ChaChaPoly.open(box, using: key, authenticating: $0) }
            return plain.withUnsafeBytes { Array($0) }
        } catch {
            throw .decryptionFailed
        }
    }

    /// EncryptWithAd: encrypts (when a key is set) and advances the nonce.
    public mutating func encrypt(ad: [UInt8], plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let out = try encrypt(nonce: nonce, ad: ad, plaintext: plaintext)
        if key != nil { nonce += 1 }
        return out
    }

    /// DecryptWithAd: decrypts (when a key is set) and advances the nonce on success.
    public mutating func decrypt(ad: [UInt8], ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let out = try decrypt(nonce: nonce, ad: ad, ciphertext: ciphertext)
        if key != nil { nonce += 1 }
        return out
    }

    /// Rekey (§4.2): the new key is the first 32 bytes of ENCRYPT(k, 2^64 − 1, "", zeros(32)).
    public mutating func rekey() {
        guard let key else { return }
        let box = try! ChaChaPoly.seal([UInt8](repeating: 0, count: 32), using: key, nonce: Self.aeadNonce(.max))
        self.key = SymmetricKey(data: box.ciphertext.prefix(32))
    }

    /// Forgets the key.
    public mutating func clear() {
        key = nil
        nonce = 0
    }
}
