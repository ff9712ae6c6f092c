import Crypto
import StarlingCrypto
import StarlingWire
import Testing

/// Issue 36, prekey bundles (0x24): the document's example is what Starling
/// builds and verifies (Python's `cryptography` builds the same bytes:
/// BoardInteropTests), and the decoder refuses what iOS refuses.
@Suite struct PrekeyTests {
    static func x25519(_ byte: UInt8) throws -> [UInt8] {
        Array(try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: byte, count: 32)).publicKey.rawRepresentation)
    }

    static func bundle() throws -> PrekeyBundle {
        var b = PrekeyBundle(noiseStaticKey: try x25519(2), prekeys: [.init(id: 7, key: try x25519(4)), .init(id: 8, key: try x25519(5))],
                             generatedAt: 1_700_000_000_000)
        try PrekeySigning.sign(&b, with: BoardTests.key)
        return b
    }

    @Test func theDocumentsExampleIsWhatStarlingBuildsAndVerifies() throws {
        let b = try Self.bundle()
        let doc = try CryptoDocumentationExampleTests.example("prekey-bundle")
        #expect(b.encoded() == doc)
        let read = try PrekeyBundle(decoding: doc[...])
        #expect(read == b)
        let owner = Array(BoardTests.key.publicKey.rawRepresentation)
        #expect(PrekeySigning.isValid(read, signingKey: owner))
        // Not self-authenticating: another key does not verify it (the control above does).
        #expect(!PrekeySigning.isValid(read, signingKey: Array(Curve25519.Signing.PrivateKey().publicKey.rawRepresentation)))
        var altered = read
        altered.prekeys[0].id = 9
        #expect(!PrekeySigning.isValid(altered, signingKey: owner))
    }

    @Test func whatIOSRefusesIsRefused() throws {
        let good = try Self.bundle()
        func tlv(_ t: UInt8, _ v: [UInt8]) -> [UInt8] { [t, UInt8(v.count >> 8), UInt8(v.count & 0xFF)] + v }
        let key = tlv(1, good.noiseStaticKey), at = tlv(3, [0, 0, 1, 0x8b, 0xcf, 0xe5, 0x68, 0]), sig = tlv(4, good.signature)
        let one = [UInt8](repeating: 0, count: 3) + [7] + [UInt8](repeating: 1, count: 32)
        #expect(try PrekeyBundle(decoding: (key + tlv(2, one) + at + sig + tlv(0x7F, [1, 2]))[...]).prekeys.count == 1) // the control; unknown TLV skipped
        for bad in [key + tlv(2, one + one) + at + sig,                       // the same id twice
                    key + tlv(2, []) + at + sig,                               // no prekey
                    key + tlv(2, Array((0..<9).flatMap { [0, 0, 0, UInt8($0)] + [UInt8](repeating: 1, count: 32) })) + at + sig, // nine
                    key + tlv(2, one + [1]) + at + sig,                        // not a multiple of 36
                    tlv(1, [1, 2]) + tlv(2, one) + at + sig,                   // a short Noise key
                    key + tlv(2, one) + sig,                                   // no generatedAt
                    key + tlv(2, one) + at + tlv(4, [1])] {                    // a short signature
            #expect(throws: WireError.self) { try PrekeyBundle(decoding: bad[...]) }
        }
    }
}
