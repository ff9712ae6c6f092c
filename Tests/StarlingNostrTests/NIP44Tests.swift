import Crypto
import Foundation
import StarlingCrypto
@testable import StarlingNostr
import Testing

/// NIP-44 v2 against the NIP's official vectors (shared/vectors/nip44.vectors.json).
@Suite struct NIP44Tests {
    nonisolated(unsafe) static let vectors: [String: Any] = {
        let url = Bundle.module.url(forResource: "Vectors/nip44.vectors", withExtension: "json")!
        let json = try! JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
        return json["v2"] as! [String: Any]
    }()
    static var valid: [String: Any] { vectors["valid"] as! [String: Any] }
    static var invalid: [String: Any] { vectors["invalid"] as! [String: Any] }

    func h(_ s: String) -> [UInt8] { try! [UInt8](hex: s) }

    @Test func conversationKeys() throws {
        let cases = Self.valid["get_conversation_key"] as! [[String: String]]
        #expect(cases.count == 35)
        for c in cases {
            let key = try Secp256k1.PrivateKey(bytes: h(c["sec1"]!))
            #expect(try NIP44.conversationKey(key, h(c["pub2"]!)).hexString == c["conversation_key"], "\(c)")
        }
        for c in Self.invalid["get_conversation_key"] as! [[String: String]] {
            let refused = (try? Secp256k1.PrivateKey(bytes: h(c["sec1"]!))).map { (try? NIP44.conversationKey($0, h(c["pub2"]!))) == nil } ?? true
            #expect(refused, "\(c["note"] ?? "")")
        }
    }

    @Test func messageKeysAndPadding() {
        let mk = Self.valid["get_message_keys"] as! [String: Any]
        let conversation = h(mk["conversation_key"] as! String)
        for c in mk["keys"] as! [[String: String]] {
            let k = NIP44.messageKeys(conversation, nonce: h(c["nonce"]!))
            #expect(k.chachaKey.hexString == c["chacha_key"] && k.chachaNonce.hexString == c["chacha_nonce"] && k.hmacKey.hexString == c["hmac_key"])
        }
        for pair in Self.valid["calc_padded_len"] as! [[Int]] {
            #expect(NIP44.paddedLength(pair[0]) == pair[1], "\(pair)")
        }
    }

    @Test func encryptAndDecrypt() throws {
        for c in Self.valid["encrypt_decrypt"] as! [[String: String]] {
            let a = try Secp256k1.PrivateKey(bytes: h(c["sec1"]!)), b = try Secp256k1.PrivateKey(bytes: h(c["sec2"]!))
            let key = try NIP44.conversationKey(a, b.publicKey)
            #expect(key.hexString == c["conversation_key"])
            #expect(try NIP44.conversationKey(b, a.publicKey) == key, "the same both ways")
            let payload = try NIP44.encrypt(c["plaintext"]!, conversationKey: key, nonce: h(c["nonce"]!))
            #expect(payload == c["payload"], "\(c["plaintext"]!.prefix(20))")
            #expect(try NIP44.decrypt(c["payload"]!, conversationKey: key) == c["plaintext"])
        }
        for c in Self.valid["encrypt_decrypt_long_msg"] as! [[String: Any]] {
            let plaintext = String(repeating: c["pattern"] as! String, count: c["repeat"] as! Int)
            #expect(Array(SHA256.hash(data: Array(plaintext.utf8))).hexString == c["plaintext_sha256"] as? String)
            let payload = try NIP44.encrypt(plaintext, conversationKey: h(c["conversation_key"] as! String), nonce: h(c["nonce"] as! String))
            #expect(Array(SHA256.hash(data: Array(payload.utf8))).hexString == c["payload_sha256"] as? String)
        }
    }

    @Test func invalidPayloadsAreRefusedWithTypedErrors() {
        let decrypts = Self.invalid["decrypt"] as! [[String: String]]
        #expect(!decrypts.isEmpty)
        for c in decrypts {
            #expect(throws: NIP44.Error.self, "\(c["note"] ?? "")") {
                try NIP44.decrypt(c["payload"]!, conversationKey: h(c["conversation_key"]!))
            }
        }
        for n in Self.invalid["encrypt_msg_lengths"] as! [Int] {
            #expect(throws: NIP44.Error.self, "\(n)") {
                try NIP44.encrypt(String(repeating: "a", count: n), conversationKey: [UInt8](repeating: 1, count: 32))
            }
        }
    }

    /// RFC 8439 §2.4.2: ChaCha20 under NIP-44's MAC.
    @Test func chacha20MatchesRFC8439() throws {
        let key = (0..<32).map { UInt8($0) }
        let nonce: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0x4A, 0, 0, 0, 0]
        let text = Array("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".utf8)
        let out = ChaCha20.xor(text, key: key, nonce: nonce, counter: 1)
        #expect(out.prefix(16).hexString == "6e2e359a2568f98041ba0728dd0d6981")
        #expect(out.suffix(2).hexString == "874d")
        #expect(ChaCha20.xor(out, key: key, nonce: nonce, counter: 1) == text)
    }

    /// BIP-340 signatures round-trip, and any change breaks them.
    @Test func schnorrSignaturesVerifyAndBreak() throws {
        let key = Secp256k1.PrivateKey.random()
        let message = Array(SHA256.hash(data: Array("an event".utf8)))
        let signature = try key.sign(message)
        #expect(Secp256k1.verify(signature, message: message, publicKey: key.publicKey))
        var bad = signature
        bad[5] ^= 1
        #expect(!Secp256k1.verify(bad, message: message, publicKey: key.publicKey))
        #expect(!Secp256k1.verify(signature, message: message, publicKey: Secp256k1.PrivateKey.random().publicKey))
        #expect(!Secp256k1.verify(signature, message: message, publicKey: [UInt8](repeating: 0xFF, count: 32)))
        #expect(throws: Secp256k1.Error.self) { try Secp256k1.PrivateKey(bytes: [UInt8](repeating: 0, count: 32)) }
        // The compressed shared point is the same from both sides.
        let other = Secp256k1.PrivateKey.random()
        #expect(try Secp256k1.sharedCompressed(key, other.publicKey).dropFirst() == Secp256k1.sharedCompressed(other, key.publicKey).dropFirst())
        #expect(try Array(Secp256k1.sharedCompressed(key, other.publicKey).dropFirst()) == Secp256k1.sharedX(key, other.publicKey))
    }
}
