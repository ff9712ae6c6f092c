import Testing
@testable import StarlingWire

/// Golden bytes the Android app publishes for from-scratch clients:
/// bitchat-android app/src/test/kotlin/com/bitchat/android/contracts/ClientRewriteWireContractTest.kt
/// (commit 29f646ef; docs/research/bitchat-2026.md §9.1). Bytes are facts: each
/// decodes in Starling to what the contract says, and re-encodes byte for byte.
@Suite struct AndroidContractVectorTests {
    @Test func v1Packet() throws {
        let bytes = h("01020701020304050607080000031011121314151617aabbcc")
        let p = try Packet(decoding: bytes)
        #expect(p.version == 1 && p.type == .message && p.ttl == 7)
        #expect(p.timestamp == 0x0102_0304_0506_0708)
        #expect(p.senderID == PeerID(rawValue: 0x1011_1213_1415_1617))
        #expect(p.recipientID == nil && p.signature == nil)
        #expect(p.payload == [0xAA, 0xBB, 0xCC])
        #expect(try p.encoded() == bytes)
    }

    @Test func v2RoutedSignedPacket() throws {
        let bytes = h("021105000000000000002a0b00000002 0102030405060708 1112131415161718 02 2122232425262728 3132333435363738 dead")
            + [UInt8](repeating: 0x5A, count: 64)
        let p = try Packet(decoding: bytes)
        #expect(p.version == 2 && p.type == .noiseEncrypted && p.ttl == 5 && p.timestamp == 42)
        #expect(p.senderID == PeerID(rawValue: 0x0102_0304_0506_0708))
        #expect(p.recipientID == PeerID(rawValue: 0x1112_1314_1516_1718))
        #expect(p.route == [PeerID(rawValue: 0x2122_2324_2526_2728), PeerID(rawValue: 0x3132_3334_3536_3738)])
        #expect(p.payload == [0xDE, 0xAD])
        #expect(p.signature?.bytes == [UInt8](repeating: 0x5A, count: 64))
        #expect(try p.encoded() == bytes)
    }

    @Test func privateMessageAndItsNoisePayload() throws {
        let m = try PrivateMessage(decoding: h("00026d3101026869"))
        #expect(m.messageID == "m1" && m.content == "hi")
        #expect(try m.encoded() == h("00026d3101026869"))
        let payload = try NoisePayload(decoding: h("0100026d3101026869"))
        #expect(payload == .privateMessage(m))
        #expect(try payload.encoded() == h("0100026d3101026869"))
    }

    @Test func fragment() throws {
        let f = try Fragment(decoding: h("00010203040506070001000302aabb"))
        #expect(f.fragmentID == 0x0001_0203_0405_0607 && f.index == 1 && f.total == 3)
        #expect(f.originalType == .message && f.data == [0xAA, 0xBB])
        #expect(f.encoded() == h("00010203040506070001000302aabb"))
    }

    @Test func requestSyncWithTheTypeAndSinceTLVs() throws {
        let bytes = h("0100011302000401020304030002aabb 040001a00500080102030405060708")
        let r = try RequestSync(decoding: bytes)
        #expect(r.filter.p == 0x13 && r.filter.m == 0x0102_0304 && r.filter.data == [0xAA, 0xBB])
        // The 2026 options: 0x04 sync types (0xa0: bits 5 and 7, fragments and files), 0x05 since.
        #expect(r.types == SyncTypes(rawValue: 0xA0) && r.types?.includes(.fragment) == true && r.types?.includes(.fileTransfer) == true)
        #expect(r.since == 0x0102_0304_0506_0708)
        #expect(r.numbering == .ios && r.unknown.isEmpty)
        #expect(try r.encoded() == bytes)
        // A leading TLV nobody knows is skipped.
        let withUnknown = try RequestSync(decoding: h("7f0002cafe") + bytes)
        #expect(withUnknown.filter == r.filter)
    }

    /// Android's earlier numbering is read, and written back in it; a malformed
    /// option is ignored and kept as it came (found by the request-sync fuzzer).
    @Test func requestSyncInAndroidsEarlierNumberingAndWithMalformedOptions() throws {
        let legacy = h("01000107 020004 00000a00 030000 050001 02 060008 0000000000000064 070010 30303030303030303030303030303061")
        let r = try RequestSync(decoding: legacy)
        #expect(r.numbering == .androidLegacy && r.types == SyncTypes([.message]) && r.since == 100 && r.fragmentIDs == [10])
        #expect(try r.encoded() == legacy)
        #expect(try RequestSync(decoding: r.encoded()) == r)
        // A since of 3 bytes and a fragment filter that is not hex: ignored, kept as unknown, re-encoded as they came.
        let odd = h("01000107 020004 00000a00 030000 040001 02 050003 010203 06000378797a")
        let o = try RequestSync(decoding: odd)
        #expect(o.numbering == .ios && o.types == SyncTypes([.message]) && o.since == nil && o.fragmentIDs == nil)
        #expect(o.unknown.map(\.type) == [0x05, 0x06])
        #expect(try RequestSync(decoding: o.encoded()) == o)
    }

    @Test func announceWithCapabilitiesAndAnUnknownTLV() throws {
        let bytes = h("0103626f620220") + [UInt8](repeating: 0x11, count: 32) + h("0320") + [UInt8](repeating: 0x22, count: 32)
            + h("050200017f02cafe")
        let a = try Announce(decoding: bytes)
        #expect(a.nickname == "bob")
        #expect(a.noisePublicKey == [UInt8](repeating: 0x11, count: 32))
        #expect(a.signingPublicKey == [UInt8](repeating: 0x22, count: 32))
        #expect(a.capabilities == 0x0100 && Capabilities(rawValue: a.capabilities!).names == ["privateMedia"])
        #expect(a.unknown == [UnknownTLV(type: 0x7F, value: [0xCA, 0xFE])])
        #expect(try a.encoded() == bytes)
    }

    @Test func filePacket() throws {
        let bytes = h("01000161020004000000020300016d0400000002dead")
        let f = try FileTransfer(decoding: bytes)
        #expect(f.name == "a" && f.declaredSize == 2 && f.mimeType == "m" && f.content == [0xDE, 0xAD])
        #expect(try f.encoded() == bytes)
    }

    @Test func whatTheContractSaysMustNotDecodeDoesNot() {
        #expect(throws: WireError.self) { try PrivateMessage(decoding: h("00026d31")) }
        #expect(throws: WireError.self) { try PrivateMessage(decoding: h("00026d3101036869")) }
        #expect(throws: WireError.self) { try RequestSync(decoding: h("0100011302000401020304")) }
        #expect(throws: WireError.self) { try Announce(decoding: h("0103626f62022011")) }
        #expect(throws: WireError.self) { try FileTransfer(decoding: h("010001610400000002de")) }
        #expect(throws: WireError.self) { try Fragment(decoding: h("000102030405060700010003")) }
    }
}
