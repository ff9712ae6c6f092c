import Crypto
import Foundation
import StarlingWire
import StarlingCrypto

/// bitchat's private-envelope encryption (not NIP-44, though it says "v2:"):
/// `"v2:" + base64url(nonce 24 ‖ ciphertext ‖ tag 16)`, XChaCha20-Poly1305,
/// key = HKDF-SHA256(33-byte compressed shared point, salt empty, info
/// "nip44-v2"). The sender lifts our x-only key with an even Y; we try the
/// even lift of theirs, then the odd one (docs/research/nostr.md, §2).
public enum BitchatEnvelope {
    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case notV2
        case notBase64
        case tooShort
        case tooLarge(Int)
        case key(Secp256k1.Error)
        case undecryptable
        case notUTF8

        public var description: String {
            switch self {
            case .notV2: "not a bitchat envelope (\"v2:\" and base64url)"
            case .notBase64: "the envelope is not base64url"
            case .tooShort: "the envelope is shorter than its nonce and tag"
            case let .tooLarge(n): "an envelope of \(n) bytes is over the 64 KiB limit"
            case let .key(e): "\(e)"
            case .undecryptable: "the envelope does not open with our key (either Y)"
            case .notUTF8: "the envelope's plaintext is not UTF-8"
            }
        }
    }

    static func key(_ shared: [UInt8]) -> [UInt8] {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: shared), salt: [UInt8](), info: Array("nip44-v2".utf8),
                               outputByteCount: 32).withUnsafeBytes { Array($0) }
    }

    /// Seals `plaintext` for `recipient` (x-only key) with `sender`'s key.
    public static func seal(_ plaintext: String, from sender: Secp256k1.PrivateKey, to recipient: [UInt8],
                            nonce: [UInt8] = XChaCha20Poly1305.randomNonce()) throws(Error) -> String {
        let shared: [UInt8]
        do { shared = try Secp256k1.sharedCompressed(sender, recipient, oddY: false) } catch { throw .key(error) }
        guard let sealed = try? XChaCha20Poly1305.seal(Array(plaintext.utf8), key: key(shared), nonce: nonce) else { throw .undecryptable }
        return "v2:" + base64url(nonce + sealed)
    }

    /// Opens an envelope from `sender` (x-only key) with our key.
    public static func open(_ content: String, from sender: [UInt8], with key: Secp256k1.PrivateKey) throws(Error) -> String {
        guard content.utf8.count <= 2 * NostrEvent.maxBytes else { throw .tooLarge(content.utf8.count) }
        guard content.hasPrefix("v2:") else { throw .notV2 }
        guard let raw = fromBase64url(String(content.dropFirst(3))) else { throw .notBase64 }
        guard raw.count >= 24 + 16 else { throw .tooShort }
        let nonce = Array(raw[0..<24]), box = Array(raw[24...])
        for odd in [false, true] {
            let shared: [UInt8]
            do { shared = try Secp256k1.sharedCompressed(key, sender, oddY: odd) } catch { throw .key(error) }
            if let plain = try? XChaCha20Poly1305.open(box, key: Self.key(shared), nonce: nonce) {
                guard let text = String(validating: plain, as: UTF8.self) else { throw .notUTF8 }
                return text
            }
        }
        throw .undecryptable
    }

    static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func fromBase64url(_ text: String) -> [UInt8]? {
        guard text.utf8.allSatisfy({ ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 45 || $0 == 95 })
        else { return nil }
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        s += String(repeating: "=", count: (4 - s.count % 4) % 4)
        return Data(base64Encoded: s).map(Array.init)
    }
}
