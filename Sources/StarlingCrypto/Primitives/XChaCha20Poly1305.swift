import Crypto

/// XChaCha20-Poly1305 (draft-irtf-cfrg-xchacha-03): ChaCha20-Poly1305 with a
/// 24-byte nonce, which is safe to pick at random for every message. HChaCha20
/// turns the key and the first 16 nonce bytes into a sub-key; swift-crypto's
/// ChaChaPoly (RFC 8439) then seals with that sub-key and the nonce
/// `0x00000000 ‖ nonce[16..<24]`.
///
/// Tested with the draft's vectors, Wycheproof's and a cross-check against
/// libsodium through the Python `pynacl` package.
public enum XChaCha20Poly1305 {
    public static let keyByteCount = 32
    public static let nonceByteCount = 24
    public static let tagByteCount = 16

    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case keyLength(Int)
        case nonceLength(Int)
        case tooShort(Int)
        case authenticationFailure

        public var description: String {
            switch self {
            case let .keyLength(n): "an XChaCha20-Poly1305 key is 32 bytes, not \(n)"
            case let .nonceLength(n): "an XChaCha20-Poly1305 nonce is 24 bytes, not \(n)"
            case let .tooShort(n): "a sealed box of \(n) bytes is shorter than its 16-byte tag"
            case .authenticationFailure: "the ciphertext or its associated data was altered, or the key is wrong"
            }
        }
    }

    /// A fresh random nonce from the system's generator.
    public static func randomNonce() -> [UInt8] {
        var rng = SystemRandomNumberGenerator()
        return (0..<nonceByteCount).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    /// Seals `plaintext`: returns ciphertext ‖ 16-byte tag.
    public static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8],
                            authenticating aad: [UInt8] = []) throws -> [UInt8] {
        let (subkey, innerNonce) = try derive(key: key, nonce: nonce)
        let box = try ChaChaPoly.seal(plaintext, using: subkey, nonce: innerNonce, authenticating: aad)
        return Array(box.ciphertext) + Array(box.tag)
    }

    /// Opens ciphertext ‖ tag, or throws `authenticationFailure`.
    public static func open(_ sealed: [UInt8], key: [UInt8], nonce: [UInt8],
                            authenticating aad: [UInt8] = []) throws -> [UInt8] {
        let (subkey, innerNonce) = try derive(key: key, nonce: nonce)
        guard sealed.count >= tagByteCount else { throw Error.tooShort(sealed.count) }
        do {
            let box = try ChaChaPoly.SealedBox(nonce: innerNonce, ciphertext: sealed.dropLast(tagByteCount),
                                               tag: sealed.suffix(tagByteCount))
            return Array(try ChaChaPoly.open(box, using: subkey, authenticating: aad))
        } catch {
            throw Error.authenticationFailure
        }
    }

    private static func derive(key: [UInt8], nonce: [UInt8]) throws -> (SymmetricKey, ChaChaPoly.Nonce) {
        guard key.count == keyByteCount else { throw Error.keyLength(key.count) }
        guard nonce.count == nonceByteCount else { throw Error.nonceLength(nonce.count) }
        let subkey = hChaCha20(key: key, nonce: Array(nonce[0..<16]))
        let inner = try ChaChaPoly.Nonce(data: [0, 0, 0, 0] + nonce[16..<24])
        return (SymmetricKey(data: subkey), inner)
    }

    /// HChaCha20: the ChaCha20 permutation of (constants, key, 16-byte nonce),
    /// without the final addition; words 0–3 and 12–15 of the result.
    public static func hChaCha20(key: [UInt8], nonce: [UInt8]) -> [UInt8] {
        precondition(key.count == 32 && nonce.count == 16, "HChaCha20 takes a 32-byte key and a 16-byte nonce")
        func word(_ b: [UInt8], _ i: Int) -> UInt32 {
            UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
        }
        var s: [UInt32] = [0x6170_7865, 0x3320_646E, 0x7962_2D32, 0x6B20_6574]
        for i in 0..<8 { s.append(word(key, 4 * i)) }
        for i in 0..<4 { s.append(word(nonce, 4 * i)) }
        func quarter(_ a: Int, _ b: Int, _ c: Int, _ d: Int) {
            s[a] = s[a] &+ s[b]; s[d] ^= s[a]; s[d] = s[d] << 16 | s[d] >> 16
            s[c] = s[c] &+ s[d]; s[b] ^= s[c]; s[b] = s[b] << 12 | s[b] >> 20
            s[a] = s[a] &+ s[b]; s[d] ^= s[a]; s[d] = s[d] << 8 | s[d] >> 24
            s[c] = s[c] &+ s[d]; s[b] ^= s[c]; s[b] = s[b] << 7 | s[b] >> 25
        }
        for _ in 0..<10 {
            quarter(0, 4, 8, 12); quarter(1, 5, 9, 13); quarter(2, 6, 10, 14); quarter(3, 7, 11, 15)
            quarter(0, 5, 10, 15); quarter(1, 6, 11, 12); quarter(2, 7, 8, 13); quarter(3, 4, 9, 14)
        }
        var out = [UInt8]()
        out.reserveCapacity(32)
        for w in s[0..<4] + s[12..<16] {
            out += [UInt8(truncatingIfNeeded: w), UInt8(truncatingIfNeeded: w >> 8),
                    UInt8(truncatingIfNeeded: w >> 16), UInt8(truncatingIfNeeded: w >> 24)]
        }
        return out
    }
}
