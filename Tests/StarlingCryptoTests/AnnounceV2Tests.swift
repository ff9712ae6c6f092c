import Crypto
import StarlingCrypto
import StarlingWire
import Testing

/// Issue 36: announce v2 (0x2C) and vouches (Noise 0x12): the iOS spec's
/// vectors, Android's joint packet vector and the document's vouch example.
@Suite struct AnnounceV2Tests {
    static func h(_ s: String) -> [UInt8] { try! [UInt8](hex: s) }

    @Test func theSpecsRotationVectorsHold() {
        let secret = PeerIDRotation.rotationSecret(noiseStaticPrivate: Array(1...32).map { UInt8($0) })
        #expect(secret == Self.h("fb82dfec0c0a2a4677beca44e2f72c80e7c5de773dd5fce6ee47af83d3c25f09"))
        #expect(PeerIDRotation.peerID(secret: secret, epoch: 100) == Self.h("f7c08c528506a374"))
        let k = PeerIDRotation.recognitionKey(sharedSecret: [UInt8](repeating: 0x42, count: 32))
        let a = [UInt8](repeating: 0x0A, count: 32), b = [UInt8](repeating: 0x0B, count: 32), id = [UInt8](repeating: 0xA1, count: 8)
        #expect(PeerIDRotation.tag(key: k, epoch: 100, from: a, to: b, peerID: id) == Self.h("4568f61d61d6cbfb"))
        #expect(PeerIDRotation.tag(key: k, epoch: 100, from: b, to: a, peerID: id) == Self.h("5313c7731f629959"))
        #expect(PeerIDRotation.epoch(unixSeconds: 1_784_000_000) == 495_555)
    }

    @Test func androidsJointPacketVectorIsWhatStarlingBuilds() throws {
        let doc = try CryptoDocumentationExampleTests.example("announce-v2")
        let block = Self.h("4568f61d61d6cbfb5313c7731f629959") + Array(0...0x2F).map { UInt8($0) }
        let v2 = AnnounceV2(epoch: 100, tagBlock: block, capabilities: 1 << 14)
        let packet = Packet(type: .announceV2, ttl: 3, timestamp: 1_700_000_000_000, senderID: PeerID(bytes: Self.h("f7c08c528506a374"))!,
                            payload: try v2.encoded(), compress: false)
        #expect(try packet.encoded() == doc)
        #expect(try AnnounceV2(decoding: try Packet(decoding: doc).payload[...]) == v2)
        // Refused as iOS refuses: a short tag block, a non-canonical capability, no epoch; the control decodes.
        func tlv(_ t: UInt8, _ v: [UInt8]) -> [UInt8] { [t, UInt8(v.count)] + v }
        let epoch = tlv(1, [0, 0, 0, 100]), tags = tlv(2, block)
        #expect(try AnnounceV2(decoding: (epoch + tags + tlv(9, [1])).prefix(1_000)).epoch == 100)
        for bad in [epoch + tlv(2, Array(block.prefix(56))), epoch + tags + tlv(3, [0x40, 0x00]), tags, epoch + tags + [3]] {
            #expect(throws: WireError.self) { try AnnounceV2(decoding: bad[...]) }
        }
    }

    @Test func theDocumentsVouchIsWhatStarlingSignsAndVerifies() throws {
        let alice = try Curve25519.Signing.PrivateKey(rawRepresentation: Array(0..<32).map { UInt8($0) })
        var a = VouchAttestation(voucheeFingerprint: Self.h("65cf5c9b1de5d41f758cb67f2d05f3e316a203fcb56351d9e3f158e02962c74d"),
                                 voucheeSigningKey: Self.h("29acbae141bccaf0b22e1a94d34d0bc7361e526d0bfe12c89794bc9322966dd7"),
                                 timestamp: 1_700_000_000_000)
        try VouchSigning.sign(&a, with: alice)
        let doc = try CryptoDocumentationExampleTests.example("vouch-batch")
        #expect(try VouchAttestation.encodeBatch([a]) == doc)
        let read = VouchAttestation.decodeBatch(doc)
        #expect(read == [a] && VouchSigning.isValid(read[0], voucherKey: Array(alice.publicKey.rawRepresentation)))
        #expect(!VouchSigning.isValid(read[0], voucherKey: Array(Curve25519.Signing.PrivateKey().publicKey.rawRepresentation)))
        // A batch reads as iOS reads: a bad entry skipped, a truncated one ends it, more than 16 not read.
        let entry = a.encoded()
        func item(_ b: [UInt8]) -> [UInt8] { [UInt8(b.count >> 8), UInt8(b.count & 0xFF)] + b }
        #expect(VouchAttestation.decodeBatch([2] + item([1, 2, 3]) + item(entry)) == [a])
        #expect(VouchAttestation.decodeBatch([2] + item(entry) + [0, 200, 1]) == [a])
        #expect(VouchAttestation.decodeBatch([20] + Array((0..<20).map { _ in item(entry) }.joined())).count == 16)
        #expect(VouchAttestation.decodeBatch([1]).isEmpty)
    }
}
