import Crypto
import Foundation
import Testing
@testable import StarlingCrypto

/// Wycheproof vectors for the primitives Starling relies on, and how Starling
/// treats the invalid and "acceptable" cases.
@Suite struct WycheproofTests {
    struct File<Group: Decodable>: Decodable { let numberOfTests: Int; let testGroups: [Group] }

    static func load<Group: Decodable>(_ name: String, as: Group.Type) throws -> File<Group> {
        try JSONDecoder().decode(File<Group>.self, from: Data(contentsOf: vectorURL(name)))
    }

    struct XDHGroup: Decodable {
        struct Test: Decodable { let tcId: Int; let flags: [String]; let `public`: String; let `private`: String; let shared: String; let result: String }
        let tests: [Test]
    }

    /// Valid cases give the expected secret; low-order public keys (an all-zero
    /// secret) are refused, as Noise sessions require; other "acceptable" inputs
    /// (non-canonical or twist points) compute as RFC 7748 says.
    @Test func x25519() throws {
        let file = try Self.load("wycheproof_x25519_test.json", as: XDHGroup.self)
        var refused = 0, checked = 0
        for test in file.testGroups.flatMap(\.tests) {
            let key = try X25519PrivateKey(rawRepresentation: h(test.private))
            let expected = h(test.shared)
            if expected.allSatisfy({ $0 == 0 }) {
                #expect(throws: NoiseError.self, "tc \(test.tcId)") { try X25519.sharedSecret(key, h(test.public)) }
                refused += 1
            } else {
                #expect(try X25519.sharedSecret(key, h(test.public)) == expected, "tc \(test.tcId)")
            }
            checked += 1
        }
        #expect(checked == file.numberOfTests)
        #expect(refused > 0)
    }

    struct EdDSAGroup: Decodable {
        struct Key: Decodable { let pk: String }
        struct Test: Decodable { let tcId: Int; let msg: String; let sig: String; let result: String }
        let publicKey: Key
        let tests: [Test]
    }

    @Test func ed25519() throws {
        let file = try Self.load("wycheproof_ed25519_test.json", as: EdDSAGroup.self)
        var checked = 0
        for group in file.testGroups {
            let key = try Curve25519.Signing.PublicKey(rawRepresentation: h(group.publicKey.pk))
            for test in group.tests {
                #expect(key.isValidSignature(h(test.sig), for: h(test.msg)) == (test.result == "valid"), "tc \(test.tcId)")
                checked += 1
            }
        }
        #expect(checked == file.numberOfTests)
    }

    struct AEADGroup: Decodable {
        struct Test: Decodable { let tcId: Int; let key: String; let iv: String; let aad: String; let msg: String; let ct: String; let tag: String; let result: String }
        let tests: [Test]
    }

    @Test func chacha20Poly1305() throws {
        let file = try Self.load("wycheproof_chacha20_poly1305_test.json", as: AEADGroup.self)
        var checked = 0
        for test in file.testGroups.flatMap(\.tests) {
            defer { checked += 1 }
            let key = SymmetricKey(data: h(test.key))
            guard let nonce = try? ChaChaPoly.Nonce(data: h(test.iv)) else {
                #expect(test.result == "invalid", "tc \(test.tcId): nonce refused")
                continue
            }
            let opened = try? ChaChaPoly.open(try ChaChaPoly.SealedBox(nonce: nonce, ciphertext: h(test.ct), tag: h(test.tag)),
                                              using: key, authenticating: h(test.aad))
            if test.result == "valid" {
                #expect(opened.map { Array($0) } == h(test.msg), "tc \(test.tcId)")
                let sealed = try ChaChaPoly.seal(h(test.msg), using: key, nonce: nonce, authenticating: h(test.aad))
                #expect(Array(sealed.ciphertext) == h(test.ct) && Array(sealed.tag) == h(test.tag), "tc \(test.tcId)")
            } else {
                #expect(opened == nil, "tc \(test.tcId)")
            }
        }
        #expect(checked == file.numberOfTests)
    }

    /// Noise's CipherState is ChaChaPoly with nonce 0x00000000 ‖ n as u64 LE.
    @Test func cipherStateNonceLayout() throws {
        let key = (0..<32).map { UInt8($0) }
        let state = CipherState(key: key)
        let n: UInt64 = 0x0102_0304_0506_0708
        let ours = try state.encrypt(nonce: n, ad: [9], plaintext: [1, 2, 3])
        let nonce = try ChaChaPoly.Nonce(data: [0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1])
        let reference = try ChaChaPoly.seal([1, 2, 3], using: SymmetricKey(data: key), nonce: nonce, authenticating: [9])
        #expect(ours == Array(reference.ciphertext) + Array(reference.tag))
        #expect(throws: NoiseError.nonceExhausted) { try state.encrypt(nonce: .max, ad: [], plaintext: []) }
    }

    struct HKDFGroup: Decodable {
        struct Test: Decodable { let tcId: Int; let ikm: String; let salt: String; let info: String; let size: Int; let okm: String; let result: String }
        let tests: [Test]
    }

    @Test func hkdfSHA256() throws {
        let file = try Self.load("wycheproof_hkdf_sha256_test.json", as: HKDFGroup.self)
        var checked = 0
        for test in file.testGroups.flatMap(\.tests) {
            defer { checked += 1 }
            if test.result == "valid" {
                #expect(try HKDFSHA256.derive(inputKeyMaterial: h(test.ikm), salt: h(test.salt), info: h(test.info),
                                              outputByteCount: test.size) == h(test.okm), "tc \(test.tcId)")
            } else {
                #expect(throws: HKDFSHA256.OutputTooLarge.self, "tc \(test.tcId)") {
                    try HKDFSHA256.derive(inputKeyMaterial: h(test.ikm), salt: h(test.salt), info: h(test.info),
                                          outputByteCount: test.size)
                }
            }
        }
        #expect(checked == file.numberOfTests)
    }
}
