import Crypto
import Foundation
import StarlingWire
import StarlingCrypto

/// NIP-44 version 2: the standard Nostr payload encryption (secp256k1 ECDH,
/// HKDF-SHA256, ChaCha20, HMAC-SHA256, padded lengths, base64). Checked
/// against the NIP's official vectors.
public enum NIP44 {
    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case key(Secp256k1.Error)
        case plaintextLength(Int)
        case unknownVersion
        case payloadLength(Int)
        case notBase64
        case badMAC
        case badPadding

        public var description: String {
            switch self {
            case let .key(e): "\(e)"
            case let .plaintextLength(n): "a NIP-44 plaintext is 1 to 65,535 bytes, not \(n)"
            case .unknownVersion: "not a NIP-44 version 2 payload"
            case let .payloadLength(n): "a NIP-44 v2 payload of \(n) characters is out of range (132 … 87,472)"
            case .notBase64: "the payload is not base64"
            case .badMAC: "the payload's MAC does not verify (wrong key, or changed)"
            case .badPadding: "the payload's padding is invalid"
            }
        }
    }

    static let salt = Array("nip44-v2".utf8)

    /// The conversation key between `privateKey` and `publicKey` (the same both ways).
    public static func conversationKey(_ privateKey: Secp256k1.PrivateKey, _ publicKey: [UInt8]) throws(Error) -> [UInt8] {
        let shared: [UInt8]
        do { shared = try Secp256k1.sharedX(privateKey, publicKey) } catch { throw .key(error) }
        return Array(HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: shared), salt: salt).withUnsafeBytes { Array($0) })
    }

    /// ChaCha20 key, ChaCha20 nonce and HMAC key for one message.
    public static func messageKeys(_ conversationKey: [UInt8], nonce: [UInt8]) -> (chachaKey: [UInt8], chachaNonce: [UInt8], hmacKey: [UInt8]) {
        let keys = HKDF<SHA256>.expand(pseudoRandomKey: SymmetricKey(data: conversationKey), info: nonce, outputByteCount: 76)
            .withUnsafeBytes { Array($0) }
        return (Array(keys[0..<32]), Array(keys[32..<44]), Array(keys[44..<76]))
    }

    /// The padded length of a plaintext of `length` bytes.
    public static func paddedLength(_ length: Int) -> Int {
        guard length > 32 else { return 32 }
        let nextPower = 1 << (Int.bitWidth - (length - 1).leadingZeroBitCount)
        let chunk = nextPower <= 256 ? 32 : nextPower / 8
        return chunk * ((length - 1) / chunk + 1)
    }

    public static func encrypt(_ plaintext: String, conversationKey: [UInt8], nonce: [UInt8]? = nil) throws(Error) -> String {
        let bytes = Array(plaintext.utf8)
        guard (1...65_535).contains(bytes.count) else { throw .plaintextLength(bytes.count) }
        let nonce = nonce ?? {
            var rng = SystemRandomNumberGenerator()
            return (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }
        }()
        let keys = messageKeys(conversationKey, nonce: nonce)
        let padded = [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
            + [UInt8](repeating: 0, count: paddedLength(bytes.count) - bytes.count)
        let ciphertext = ChaCha20.xor(padded, key: keys.chachaKey, nonce: keys.chachaNonce)
        let mac = Array(HMAC<SHA256>.authenticationCode(for: nonce + ciphertext, using: SymmetricKey(data: keys.hmacKey)))
        return Data([0x02] + nonce + ciphertext + mac).base64EncodedString()
    }

    public static func decrypt(_ payload: String, conversationKey: [UInt8]) throws(Error) -> String {
        guard let first = payload.first, first != "#" else { throw .unknownVersion }
        guard (132...87_472).contains(payload.utf8.count) else { throw .payloadLength(payload.utf8.count) }
        guard let data = Data(base64Encoded: payload).map(Array.init) else { throw .notBase64 }
        guard (99...65_603).contains(data.count) else { throw .payloadLength(payload.utf8.count) }
        guard data[0] == 0x02 else { throw .unknownVersion }
        let nonce = Array(data[1..<33]), ciphertext = Array(data[33..<(data.count - 32)]), mac = Array(data[(data.count - 32)...])
        let keys = messageKeys(conversationKey, nonce: nonce)
        guard HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: nonce + ciphertext, using: SymmetricKey(data: keys.hmacKey)) else {
            throw .badMAC
        }
        let padded = ChaCha20.xor(ciphertext, key: keys.chachaKey, nonce: keys.chachaNonce)
        let length = Int(padded[0]) << 8 | Int(padded[1])
        guard length >= 1, padded.count == 2 + paddedLength(length), padded[2...].count >= length else { throw .badPadding }
        guard let text = String(validating: padded[2..<(2 + length)], as: UTF8.self) else { throw .badPadding }
        return text
    }
}
