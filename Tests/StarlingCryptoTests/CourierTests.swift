import Crypto
import Foundation
import StarlingCrypto
import StarlingTestSupport
import StarlingWire
import Testing

/// Issue 36, courier drops: the envelope, the recipient tags and the Noise X
/// seal, byte for byte with the vectors iOS's own code gives
/// (docs/research/bitchat-courier.md §7) and docs/PROTOCOL.md's examples.
@Suite struct CourierTests {
    static func h(_ s: String) -> [UInt8] { try! [UInt8](hex: s) }
    static func key(_ b: UInt8) -> X25519PrivateKey { try! X25519PrivateKey(rawRepresentation: [UInt8](repeating: b, count: 32)) }
    static func pub(_ b: UInt8) -> [UInt8] { Array(key(b).publicKey.rawRepresentation) }
    static let payload = h("0100056d73672d31010568656c6c6f")

    @Test func recipientTagsAreIOSs() {
        #expect(CourierSeal.recipientTag(noiseKey: [UInt8](repeating: 0x11, count: 32), day: 20_000) == Self.h("173d54ec4ce3de7b45d355eea6500dde"))
        #expect(CourierSeal.recipientTag(noiseKey: [UInt8](repeating: 0x11, count: 32), day: 20_001) == Self.h("33055c4c2dee565a4a641bd00aa1d691"))
        #expect(CourierSeal.recipientTag(noiseKey: [UInt8](repeating: 0x22, count: 32), day: 20_000) == Self.h("664d981a8883942af67dd4c32d3140f2"))
        #expect(CourierSeal.recipientTag(noiseKey: [UInt8](repeating: 0x33, count: 32), day: 20_254) == Self.h("4688c0220629c88984a75ea2374f1cdc"))
        #expect(CourierSeal.epochDay(unixSeconds: 1_750_000_000) == 20_254)
        #expect(CourierSeal.candidateTags(noiseKey: Self.pub(2), day: 20_254)[1] == Self.h("562c403d728498bd97d8e82b70a43050"))
    }

    @Test func envelopesReadAndWriteAsIOSDoes() throws {
        let doc = try CryptoDocumentationExampleTests.example("courier-envelope")
        let e = CourierEnvelope(recipientTag: Array(0..<16), expiry: 0x0102_0304_0506_0708, ciphertext: [0xAA, 0xBB, 0xCC], copies: 4,
                                prekeyID: 0x1122_3344)
        #expect(try e.encoded() == doc && (try CourierEnvelope(decoding: doc[...])) == e)
        // v1 (no copies, no prekey) is the older form; a v2 adds its 7 bytes at the end.
        let v1 = CourierEnvelope(recipientTag: [UInt8](repeating: 0x33, count: 16), expiry: 1_800_000_000_000, ciphertext: Array("same".utf8))
        #expect(try v1.encoded() == Self.h("01001033333333333333333333333333333333020008000001a3185c500003000473616d65"))
        var v2 = v1
        v2.copies = 4
        v2.prekeyID = 7
        #expect(try v2.encoded() == (try v1.encoded()) + Self.h("0400010405000400000007"))
        // Clamped to 1–8; a wrong size, a missing seal, an empty seal: refused. The control above decodes.
        #expect(CourierEnvelope(recipientTag: Array(0..<16), expiry: 1, ciphertext: [1], copies: 200).copies == 8)
        #expect(try CourierEnvelope(decoding: (try v1.encoded() + [0x04, 0, 1, 0])[...]).copies == 1)
        func tlv(_ t: UInt8, _ v: [UInt8]) -> [UInt8] { [t, UInt8(v.count >> 8), UInt8(v.count & 0xFF)] + v }
        let tag = tlv(1, Array(0..<16)), expiry = tlv(2, [0, 0, 0, 0, 0, 0, 0, 1])
        for bad in [tlv(1, Array(0..<15)) + expiry + tlv(3, [1]), tag + expiry, tag + expiry + tlv(3, []), tag + expiry + tlv(3, [1]) + tlv(5, [1, 2])] {
            #expect(throws: WireError.self) { try CourierEnvelope(decoding: bad[...]) }
        }
    }

    @Test func theSealIsIOSsAndOpensOnlyForItsKey() throws {
        let alice = Self.key(1), bob = Self.key(2), prekey = Self.key(4)
        let sealed = try CourierSeal.seal(Self.payload, from: alice, to: Self.pub(2), ephemeral: Self.key(3))
        let doc = try CryptoDocumentationExampleTests.example("courier-drop")
        let envelope = try CourierEnvelope(decoding: doc[...])
        #expect(envelope.ciphertext == sealed && envelope.recipientTag == CourierSeal.recipientTag(noiseKey: Self.pub(2), day: 20_254))
        #expect(envelope.expiry == 1_750_000_000_000 + 86_400_000)
        let opened = try CourierSeal.open(sealed, with: bob)
        #expect(opened.payload == Self.payload && opened.sender == Self.pub(1))
        // To a one-time prekey: the document's bytes, opened only with that prekey and its ID.
        let toPrekey = try CourierSeal.seal(Self.payload, from: alice, to: Self.pub(4), prekeyID: 7, ephemeral: Self.key(3))
        #expect(toPrekey == (try CryptoDocumentationExampleTests.example("courier-seal-prekey")))
        #expect(try CourierSeal.open(toPrekey, with: prekey, prekeyID: 7).payload == Self.payload)
        #expect(throws: NoiseError.self) { try CourierSeal.open(toPrekey, with: prekey, prekeyID: 8) }
        #expect(throws: NoiseError.self) { try CourierSeal.open(toPrekey, with: prekey) } // a v2 seal never opens as v1
        #expect(throws: NoiseError.self) { try CourierSeal.open(sealed, with: Self.key(9)) } // nor for anyone else
        var flipped = sealed
        flipped[40] ^= 1
        #expect(throws: NoiseError.self) { try CourierSeal.open(flipped, with: bob) }
    }
}

/// The same drop and seal from Python's `noiseprotocol`, written from the iOS rules.
@Suite(.usesProcesses) struct CourierInteropTests {
    @Test func pythonsNoiseSealsTheSameDrops() async throws {
        let out = try await PythonEnvironment.run("courier_vectors.py")
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: String], "\(out)")
        for name in ["courier-drop", "courier-seal-prekey"] {
            let theirs = try #require(parsed[name], "no \(name) in \(out)")
            #expect(theirs == (try CryptoDocumentationExampleTests.example(name)).map { String(format: "%02x", $0) }.joined(), "\(name)")
        }
    }
}
