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
        var x0: UInt32 = 0x6170_7865, x1: UInt32 = 0x3320_646E, x2: UInt32 = 0x7962_2D32, x3: UInt32 = 0x6B20_6574
        var x4 = word(key, 0), x5 = word(key, 4), x6 = word(key, 8), x7 = word(key, 12)
        var x8 = word(key, 16), x9 = word(key, 20), x10 = word(key, 24), x11 = word(key, 28)
        var x12 = word(nonce, 0), x13 = word(nonce, 4), x14 = word(nonce, 8), x15 = word(nonce, 12)
        @inline(__always)
        func quarter(_ a: inout UInt32, _ b: inout UInt32, _ c: inout UInt32, _ d: inout UInt32) {
            a = a &+ b; d ^= a; d = d << 16 | d >> 16
            c = c &+ d; b ^= c; b = b << 12 | b >> 20
            a = a &+ b; d ^= a; d = d << 8 | d >> 24
            c = c &+ d; b ^= c; b = b << 7 | b >> 25
        }
        for _ in 0..<10 {
            quarter(&x0, &x4, &x8, &x12); quarter(&x1, &x5, &x9, &x13)
            quarter(&x2, &x6, &x10, &x14); quarter(&x3, &x7, &x11, &x15)
            quarter(&x0, &x5, &x10, &x15); quarter(&x1, &x6, &x11, &x12)
            quarter(&x2, &x7, &x8, &x13); quarter(&x3, &x4, &x9, &x14)
        }
        var out = [UInt8]()
        out.reserveCapacity(32)
        for w in [x0, x1, x2, x3, x12, x13, x14, x15] {
            out += [UInt8(truncatingIfNeeded: w), UInt8(truncatingIfNeeded: w >> 8),
                    UInt8(truncatingIfNeeded: w >> 16), UInt8(truncatingIfNeeded: w >> 24)]
        }
        return out
    }
}
